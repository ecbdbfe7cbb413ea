"""The sandbox's memory limit seen from inside: finding its cgroup, and telling a grain killed
by it (an OOM kill counted while the child lived) from any other SIGKILL."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from sand.grain import runner
from sand.grain.channel import Channel
from sand.grain.limits import MemoryWatch
from sand.grain.pool import Pool
from sand.grain.result import Invocation

from tests.unit.sdk.forking import until_ended

MIB = 1024 * 1024


def test_find_cgroupV2_readsLimitAndCounter(tmp_path: Path) -> None:
    """On cgroup v2 the limit is memory.max and the counter the oom_kill line of memory.events."""
    (tmp_path / "memory.max").write_text(f"{512 * MIB}\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")

    watch = MemoryWatch.find(tmp_path)

    assert watch is not None
    assert watch.limit_mb == 512
    assert watch.oom_kills() == 2


def test_find_cgroupV1_readsLimitAndCounter(tmp_path: Path) -> None:
    """On cgroup v1 (Docker shows a container its own memory cgroup) the same from v1's files."""
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "memory.limit_in_bytes").write_text(f"{192 * MIB}\n")
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")

    watch = MemoryWatch.find(tmp_path)

    assert watch is not None
    assert (watch.limit_mb, watch.oom_kills()) == (192, 1)


def test_find_noLimit_isNone(tmp_path: Path) -> None:
    """An unlimited cgroup ("max"), or none at all (the process backend's jail), gives None."""
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.events").write_text("oom_kill 0\n")

    assert MemoryWatch.find(tmp_path) is None
    assert MemoryWatch.find(tmp_path / "absent") is None


def _killed_after_oom(counter: Path) -> Callable[[Channel], None]:
    def work(channel: Channel) -> None:
        counter.write_text("oom_kill 1\n")  # the kernel counts the kill it is about to do
        os.kill(os.getpid(), signal.SIGKILL)

    return work


@pytest.mark.timeout(10)
def test_pool_sigkillWhileOomCounted_failsNamingTheMemoryLimit(tmp_path: Path) -> None:
    """A child SIGKILLed while the cgroup's OOM-kill count moved failed at the memory limit:
    States.Runtime naming the limit and its size, instead of "killed by signal SIGKILL"."""
    counter = tmp_path / "memory.events"
    counter.write_text("oom_kill 0\n")
    pool = Pool(grace_s=0.3, memory=MemoryWatch(limit_bytes=300 * MIB, counter=counter))

    pool.fork(_killed_after_oom(counter), grain="hog")
    (ended,) = until_ended(pool)

    result = ended.outcome()
    assert result.error == "States.Runtime"
    assert result.cause is not None
    assert "grain 'hog'" in result.cause and "memory limit of 300 MiB" in result.cause


@pytest.mark.timeout(10)
def test_pool_sigkillWithoutOom_staysASignal(tmp_path: Path) -> None:
    """A SIGKILL while the counter stood still is not blamed on memory."""
    counter = tmp_path / "memory.events"
    counter.write_text("oom_kill 3\n")
    other = tmp_path / "unrelated"
    pool = Pool(grace_s=0.3, memory=MemoryWatch(limit_bytes=300 * MIB, counter=counter))

    pool.fork(_killed_after_oom(other), grain="g")
    (ended,) = until_ended(pool)

    assert ended.outcome().cause == "grain 'g' process was killed by signal SIGKILL (9)"


def test_invoke_memoryErrorUnderAddressSpaceLimit_namesTheLimit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the process backend (RLIMIT_AS) a MemoryError is the sandbox's memory limit: said so."""
    monkeypatch.setattr(runner, "address_space_limit_mb", lambda: 384)

    def hog(event: object, context: object) -> None:
        raise MemoryError

    result = runner.invoke(hog, Invocation("a", "hog", "e1", {}, 5.0), {})

    assert result.error == "States.Runtime"
    assert "memory limit of 384 MiB" in (result.cause or "")

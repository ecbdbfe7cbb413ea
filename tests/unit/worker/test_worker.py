"""GrainWorker on the shared fork model: its child takes one event from the queue (or up to
``events_per_instance`` in the reuse mode), and the parent fails the task of an instance
that did not end clean (no Redis: in-memory twins)."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

import pytest
from sand.app import AppSpec, GrainSpec, Limits
from sand.grain.child import ChildSetup
from sand.grain.pool import Ended, Pool
from sand.grain.result import GrainError, GrainResult
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain
from sand_worker.worker import GrainWorker

from tests.unit.sdk.forking import until_ended


class PipeQueueClient:
    """Stands for the Redis client: BRPOP reads one line from a pipe; at its end (the
    writer closed it), BRPOP times out."""

    def __init__(self, fd: int, writer_fd: int) -> None:
        self._fd = fd
        self._writer_fd = writer_fd  # the test's end: closed here, so the test's close is EOF
        self._queue: BinaryIO | None = None

    def ping(self) -> bool:
        return True

    def brpop(self, keys: list[str], timeout: int) -> list[bytes] | None:
        if self._queue is None:
            with contextlib.suppress(OSError):
                os.close(self._writer_fd)
            self._queue = os.fdopen(self._fd, "rb")
        line = self._queue.readline()
        return [keys[0].encode(), line.rstrip(b"\n")] if line else None

    def rpush(self, key: str, value: bytes) -> None:
        raise AssertionError("the worker is alive: nothing is handed back")


class FakeEventHandler:
    """Runs an event by its name; records the failures the parent reports."""

    def __init__(self, client: PipeQueueClient) -> None:
        self.client = client
        self.failed: list[tuple[bytes, str | None, GrainResult]] = []

    def handle(self, raw: bytes, on_task: Callable[[str, float], None]) -> GrainResult | None:
        if raw == b"before-task":
            raise RuntimeError("cannot decode the event")
        on_task(f"token-{raw.decode()}", 5.0)
        if raw == b"segfault":
            faulthandler.disable()  # pytest enables it; its dump would only be noise here
            os.kill(os.getpid(), signal.SIGSEGV)
        if raw == b"timeout":
            return GrainResult.failure(GrainError.TIMEOUT, "grain 'g' did not finish")
        return GrainResult(output=None)

    def fail_task(self, raw: bytes, token: str | None, result: GrainResult) -> None:
        self.failed.append((raw, token, result))


@pytest.fixture
def queue() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def serve(
    events: list[bytes], queue: tuple[int, int], *, events_per_instance: int = 1
) -> tuple[FakeEventHandler, list[Ended]]:
    """Fork one instance the way the worker does, give it ``events`` (none: stop it while
    idle; else close the queue after them), and report its end."""
    config = WorkerConfig.from_env(
        {"SAND_APP": "app", "SAND_APP_DIR": "/nonexistent", "SAND_REDIS_SOCKET": "/nonexistent"}
    )
    grains = {"g": GrainSpec("g", Path("/nonexistent/g.py"), events_per_instance)}
    app = AppSpec("app", Path("/nonexistent"), grains, {}, None, Limits(), None)
    worker = GrainWorker(Grain(app, "g", lambda e, c: None), config)
    handler = FakeEventHandler(PipeQueueClient(*queue))
    worker._handler = cast(EventHandler, handler)  # what run() builds before forking
    pool = Pool(grace_s=0.3, setup=ChildSetup(die_with_parent=True))
    child = pool.fork(worker._serve, grain="g")
    if not events:
        assert pool.wait(0.1) == []
        ended = pool.stop(within_s=3)
    else:
        os.write(queue[1], b"".join(event + b"\n" for event in events))
        os.close(queue[1])
        ended = until_ended(pool)
    assert [e.child for e in ended] == [child]
    for end in ended:
        worker._report(cast(EventHandler, handler), end)
    return handler, ended


@pytest.mark.timeout(10)
def test_instance_handlesEventAndExitsClean_nothingReported(queue: tuple[int, int]) -> None:
    """An instance that handled its event exits clean; the parent reports nothing."""
    handler, (ended,) = serve([b"ok"], queue)
    assert ended.clean and ended.child.taken == b"ok" and ended.child.token == "token-ok"
    assert handler.failed == []


@pytest.mark.timeout(10)
def test_instance_crashInTask_failsThatTaskNamingTheSignal(queue: tuple[int, int]) -> None:
    """An instance killed by a signal in its task fails that task, with the signal named."""
    handler, _ = serve([b"segfault"], queue)
    ((raw, token, result),) = handler.failed
    assert (raw, token, result.error) == (b"segfault", "token-segfault", "States.TaskFailed")
    assert result.cause == "grain 'g' process was killed by signal SIGSEGV (11)"


@pytest.mark.timeout(10)
def test_instance_failsBeforeTask_failsExecutionAsRuntime(queue: tuple[int, int]) -> None:
    """An instance that took an event but broke before its task fails it as States.Runtime."""
    handler, _ = serve([b"before-task"], queue)
    ((raw, token, result),) = handler.failed
    assert (raw, token, result.error) == (b"before-task", None, "States.Runtime")
    assert (result.cause or "").startswith(
        "the instance of grain 'g' failed before running its task (grain 'g' process exited "
        "with status 70 (RUNNER_FAILED"
    )


@pytest.mark.timeout(10)
def test_idleInstance_stopped_nothingReported(queue: tuple[int, int]) -> None:
    """An idle instance killed at shutdown had no event: nothing to report."""
    handler, (ended,) = serve([], queue)
    assert os.WTERMSIG(ended.status) == signal.SIGKILL
    assert handler.failed == []


@pytest.mark.timeout(10)
def test_reuse_oneInstanceServesItsEventsInSequence_thenExitsClean(
    queue: tuple[int, int],
) -> None:
    """With events_per_instance 3, one process serves three events: DONE after each of the
    first two (idle again, no deadline), then it exits clean after the third."""
    handler, (ended,) = serve([b"a", b"b", b"c", b"d"], queue, events_per_instance=3)
    assert ended.clean and ended.child.served == 2
    assert (ended.child.taken, ended.child.token) == (b"c", "token-c")
    assert handler.failed == []


@pytest.mark.timeout(10)
def test_reuse_crashOnSecondEvent_failsOnlyThatEvent(queue: tuple[int, int]) -> None:
    """A reused instance that dies fails only the event it was serving."""
    handler, (ended,) = serve([b"a", b"segfault", b"c"], queue, events_per_instance=5)
    assert ended.child.served == 1
    ((raw, token, result),) = handler.failed
    assert (raw, token, result.error) == (b"segfault", "token-segfault", "States.TaskFailed")


@pytest.mark.timeout(10)
def test_reuse_grainTimedOut_instanceRetiresAfterThatEvent(queue: tuple[int, int]) -> None:
    """After a grain timed out in it, an instance serves no further event (its state is
    unknown): it exits clean with that event as its last, the next one left queued."""
    handler, (ended,) = serve([b"a", b"timeout", b"c"], queue, events_per_instance=5)
    assert ended.clean and ended.child.served == 1 and ended.child.taken == b"timeout"
    assert handler.failed == []


@pytest.mark.timeout(10)
def test_reuse_idleAfterServing_instanceRetires(queue: tuple[int, int]) -> None:
    """A reused instance that waited a whole BRPOP timeout (here: the queue closed) after
    serving exits clean, giving its memory back."""
    handler, (ended,) = serve([b"a"], queue, events_per_instance=5)
    assert ended.clean and ended.child.served == 1 and ended.child.taken is None
    assert handler.failed == []

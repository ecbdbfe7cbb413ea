"""The fork model's two ends: child_main in a forked child, Pool's monitoring loop in the parent.

These are the paths a grain worker takes: children forked ahead of their work,
which report what they took (TOOK) and when their deadline starts (TASK).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from sand.grain.channel import Channel, ParentGone
from sand.grain.child import ChildSetup
from sand.grain.exits import ExitCode
from sand.grain.pool import SWEEP_S, UNTASKED_LIMIT_S, Child, Pool

from tests.unit.sdk.forking import gone, until_ended


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.timeout(10)
def test_fork_preforkedChild_idleUntilItTakesWork_thenReportsTookAndTask() -> None:
    """A child forked before its work is idle; it reports what it took and its task, and exits
    clean in a process group of its own."""
    queue_r, queue_w = os.pipe()  # stands for the grain's queue
    pool = Pool(grace_s=0.3)

    def work(channel: Channel) -> None:
        with os.fdopen(queue_r, "rb") as queue:
            event = queue.readline()
        channel.took(json.dumps({"event": event.decode(), "pgid": os.getpgid(0)}).encode())
        channel.task_started("token-1", 5.0)

    child = pool.fork(work, grain="g")
    os.close(queue_r)
    assert pool.wait(0.05) == []
    assert not child.busy and child.kill_at is None
    os.write(queue_w, b"event-1\n")
    os.close(queue_w)
    (ended,) = until_ended(pool)
    assert ended.child is child and ended.clean
    assert json.loads(child.taken or b"") == {"event": "event-1\n", "pgid": child.pid}
    assert child.token == "token-1" and child.timeout_s == 5.0
    assert child.kill_at is not None and child.busy
    assert not pool.children


def fork_task_started(pool: Pool, grain: str, timeout_s: float) -> Child:
    """Fork a child that starts a task of ``timeout_s`` and then sleeps; return it once the
    pool has read its TASK frame."""

    def work(channel: Channel) -> None:
        channel.task_started("token-1", timeout_s)
        time.sleep(30)

    child = pool.fork(work, grain=grain)
    while child.kill_at is None:
        assert pool.wait(0.05) == []
    return child


@pytest.mark.timeout(10)
def test_wait_deadlineFromTaskFrame_killsGroupAfterGrace() -> None:
    """The deadline starts at the TASK frame; past it plus grace the group is killed and the
    end is States.Timeout (time comes from the injected clock)."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock)
    child = fork_task_started(pool, "slow", 10.0)
    assert child.kill_at == pytest.approx(clock.now + 11.0)
    clock.now += 10.5
    assert pool.wait(0.05) == [] and not child.killed
    clock.now += 1.0
    (ended,) = until_ended(pool)
    assert child.timed_out and not ended.clean
    assert os.WTERMSIG(ended.status) == signal.SIGKILL
    result = ended.outcome()
    assert result.error == "States.Timeout"
    assert result.cause == (
        "grain 'slow' did not finish within its timeout of 10 s and its process group was killed"
    )


@pytest.mark.timeout(10)
def test_wait_forgedLongTask_deadlineCappedAtMaxTimeout() -> None:
    """A TASK frame asking for more than the pool's max_timeout_s (a grain can write to its
    own pipe) gets the cap: the child is killed at the cap plus grace."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, max_timeout_s=2.0)
    child = fork_task_started(pool, "forger", 1e9)
    assert child.timeout_s == 2.0 and child.kill_at == pytest.approx(clock.now + 3.0)
    clock.now += 3.0
    (ended,) = until_ended(pool)
    assert child.timed_out and ended.outcome().error == "States.Timeout"


@pytest.mark.timeout(10)
def test_wait_tookButNoTask_killedAtMaxTimeout() -> None:
    """A child that took an event and hangs before its TASK frame (its grain never started)
    is killed at the pool's max_timeout_s (at least UNTASKED_LIMIT_S) plus grace from its
    TOOK, not left holding the event for ever."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, max_timeout_s=2.0)

    def work(channel: Channel) -> None:
        channel.took(b"event-1")
        time.sleep(30)

    child = pool.fork(work, grain="stuck")
    while child.taken is None:
        assert pool.wait(0.05) == []
    assert child.token is None
    assert child.kill_at == pytest.approx(clock.now + UNTASKED_LIMIT_S + 1.0)
    clock.now += UNTASKED_LIMIT_S + 0.5
    assert pool.wait(0.05) == [] and not child.killed
    clock.now += 0.5
    (ended,) = until_ended(pool)
    assert child.timed_out and not ended.clean
    assert os.WTERMSIG(ended.status) == signal.SIGKILL


@pytest.mark.timeout(10)
def test_wait_idleAfterDonePastIdleLimit_isKilled() -> None:
    """A child that sent DONE is idle with no deadline; if it neither takes work nor exits
    within idle_limit_s (a forged DONE), it is killed. Before that it is left alone."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, idle_limit_s=5.0)

    def work(channel: Channel) -> None:
        channel.took(b"event")
        channel.task_started("token-1", 1.0)
        channel.done()
        time.sleep(30)

    child = pool.fork(work, grain="reused")
    while not child.served:
        assert pool.wait(0.05) == []
    assert not child.busy and child.kill_at is None
    clock.now += 4.0
    assert pool.wait(0.05) == [] and not child.killed
    clock.now += 1.5
    (ended,) = until_ended(pool)
    assert child.killed and not child.timed_out and not ended.clean
    assert os.WTERMSIG(ended.status) == signal.SIGKILL


def segfaults_after_task(channel: Channel) -> None:
    channel.took(b"event")
    channel.task_started("token-1", 5.0)
    faulthandler.disable()  # pytest enables it; its dump would only be noise here
    os.kill(os.getpid(), signal.SIGSEGV)


@pytest.mark.timeout(10)
def test_wait_crashAfterTask_isExplainedWithItsTask() -> None:
    """A child that dies in its task keeps what it reported, and its end names the signal."""
    pool = Pool(grace_s=0.3)
    child = pool.fork(segfaults_after_task, grain="g")
    (ended,) = until_ended(pool)
    assert not ended.clean
    assert (child.taken, child.token) == (b"event", "token-1")
    assert ended.outcome().cause == "grain 'g' process was killed by signal SIGSEGV (11)"


@pytest.mark.timeout(10)
def test_childMain_workRaises_exitsRunnerFailedWithTraceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """An exception out of the work exits with ExitCode.RUNNER_FAILED, traceback on stderr."""
    pool = Pool(grace_s=0.3)

    def work(channel: Channel) -> None:
        raise RuntimeError("runner broke")

    pool.fork(work, grain="g")
    (ended,) = until_ended(pool)
    assert os.waitstatus_to_exitcode(ended.status) == ExitCode.RUNNER_FAILED == 70
    assert "RUNNER_FAILED" in (ended.outcome().cause or "")
    assert "RuntimeError: runner broke" in capfd.readouterr().err


@pytest.mark.timeout(10)
def test_childMain_parentGone_exitsParentGone() -> None:
    """ParentGone out of the work is a quiet exit with ExitCode.PARENT_GONE."""
    pool = Pool(grace_s=0.3)

    def work(channel: Channel) -> None:
        assert not channel.parent_gone()
        raise ParentGone("gone")

    pool.fork(work, grain="g")
    (ended,) = until_ended(pool)
    assert os.waitstatus_to_exitcode(ended.status) == ExitCode.PARENT_GONE
    assert not ended.clean


@pytest.mark.timeout(10)
def test_stop_terminatesBusyChildren_killsIdleOnes() -> None:
    """On stop, a busy child gets SIGTERM (to finish if it can), an idle one SIGKILL."""
    pool = Pool(grace_s=0.3)
    idle = pool.fork(lambda channel: time.sleep(30), grain="g")

    def busy_work(channel: Channel) -> None:
        channel.took(b"event")
        time.sleep(30)

    busy = pool.fork(busy_work, grain="g")
    while not busy.busy:
        pool.wait(0.05)
    ended = {e.child.pid: e for e in pool.stop(within_s=3)}
    assert os.WTERMSIG(ended[idle.pid].status) == signal.SIGKILL
    assert os.WTERMSIG(ended[busy.pid].status) == signal.SIGTERM
    assert not pool.children


def _pool_parent(pid_file: Path) -> None:
    """In a forked process: fork a child tied to us, wait until it runs, exit."""
    pool = Pool(setup=ChildSetup(die_with_parent=True))

    def work(channel: Channel) -> None:
        pid_file.write_text(str(os.getpid()))
        time.sleep(30)

    pool.fork(work, grain="g")
    while not pid_file.exists() or not pid_file.read_text():
        time.sleep(0.01)


@pytest.mark.timeout(15)
def test_dieWithParent_childIsKilledWhenItsParentExits(tmp_path: Path) -> None:
    """With die_with_parent, a child (in its own group) does not outlive its parent."""
    pid_file = tmp_path / "child.pid"
    parent = os.fork()
    if parent == 0:
        code = 1
        try:
            _pool_parent(pid_file)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(parent, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gone(int(pid_file.read_text()))


@pytest.mark.timeout(10)
def test_wait_neverReapsChildrenItDidNotFork() -> None:
    """The pool reaps its own pids only: a subprocess's exit status stays its owner's."""
    other = subprocess.Popen(["sh", "-c", "exit 7"])
    pool = Pool(grace_s=0.3)
    pool.fork(lambda channel: time.sleep(0.2), grain="g")
    until_ended(pool)
    assert other.wait(timeout=5) == 7


def escapes_with_the_pipe(channel: Channel) -> None:
    grandchild = os.fork()
    if grandchild == 0:  # leaves the group and keeps the pipe open for a while
        os.setsid()
        time.sleep(5)
        os._exit(0)
    channel.took(str(grandchild).encode())


@pytest.mark.timeout(10)
def test_wait_pipeHeldByEscapedGrandchild_childFoundBySweep() -> None:
    """A child whose pipe a grandchild outside its group keeps open is still reaped, by the
    sweep, with what it reported."""
    pool = Pool(grace_s=0.3)
    child = pool.fork(escapes_with_the_pipe, grain="g")
    started = time.monotonic()
    try:
        (ended,) = until_ended(pool)
        assert ended.clean and not child.eof
        assert time.monotonic() - started < SWEEP_S + 1.0
    finally:
        if child.taken:
            os.kill(int(child.taken), signal.SIGKILL)


@pytest.mark.timeout(15)
def test_oomScoreAdj_childRaisesItsOwn_parentKeepsIts(tmp_path: Path) -> None:
    """With oom_score_adj, a child is the OOM killer's earlier choice; the parent is left
    as it was."""
    seen = tmp_path / "adj"
    pool = Pool(setup=ChildSetup(oom_score_adj=300))

    def work(channel: Channel) -> None:
        seen.write_text(Path("/proc/self/oom_score_adj").read_text())

    pool.fork(work, grain="g")
    until_ended(pool)
    assert seen.read_text().strip() == "300"
    assert Path("/proc/self/oom_score_adj").read_text().strip() != "300"

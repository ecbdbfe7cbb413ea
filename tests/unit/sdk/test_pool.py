"""The fork model's two ends: child_main in a forked child, Pool's monitoring loop in the parent.

These are the paths a grain worker takes: children forked ahead of their work, idle on
their task pipe until the parent assigns them a task, whose result ends it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from sand.grain.channel import Channel, ParentGone
from sand.grain.child import ChildSetup
from sand.grain.exits import ExitCode
from sand.grain.pool import SWEEP_S, Child, Pool
from sand.grain.result import GrainResult

from tests.unit.sdk.forking import gone, until_ended


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def serve_tasks(channel: Channel) -> None:
    """A task server as a grain worker's instance is: runs each task it is assigned (its
    body names what to do) and delivers the result, until its task pipe closes."""
    while (task := channel.next_task()) is not None:
        if task == b"segfault":
            faulthandler.disable()  # pytest enables it; its dump would only be noise here
            os.kill(os.getpid(), signal.SIGSEGV)
        if task == b"hang":
            time.sleep(30)
        if task == b"forge":
            # a grain that writes frames of its own: an extra result, then it hangs
            channel.deliver(GrainResult(output="forged"))
            channel.deliver(GrainResult(output="forged again"))
            time.sleep(30)
        pgid = os.getpgid(0)
        channel.deliver(GrainResult(output={"task": task.decode(), "pgid": pgid}), wrote="w")


def until_delivered(pool: Pool) -> list[Child]:
    while not (turn := pool.turn(0.05)).delivered:
        assert turn.ended == []
    return turn.delivered


@pytest.mark.timeout(10)
def test_assign_idleChildRunsTasksInSequence_deliveringEachResult() -> None:
    """A child forked to serve tasks is idle (no deadline) until a task is assigned; its
    result ends the task, and it takes the next one; closing its pipe retires it clean."""
    pool = Pool(grace_s=0.3)
    child = pool.fork(serve_tasks, grain="g", tasks=True)
    assert pool.wait(0.05) == []
    assert not child.busy and child.kill_at is None
    for n in (1, 2):
        assert pool.assign(child, f"task-{n}".encode(), taken=b"event", token="t", timeout_s=5)
        assert child.busy and child.taken == b"event" and child.token == "t"
        assert until_delivered(pool) == [child]
        assert child.result is not None
        assert child.result.output == {"task": f"task-{n}", "pgid": child.pid}
        assert child.wrote == "w" and child.served == n
        assert not child.busy and child.kill_at is None
    pool.retire(child)
    (ended,) = until_ended(pool)
    assert ended.child is child and ended.clean
    assert not pool.children


@pytest.mark.timeout(10)
def test_assign_busyOrUntaskedChild_isRefused() -> None:
    """A task goes only to an idle child forked to serve tasks."""
    pool = Pool(grace_s=0.3)
    plain = pool.fork(lambda channel: time.sleep(30), grain="g")
    server = pool.fork(serve_tasks, grain="g", tasks=True)
    assert not pool.assign(plain, b"x", taken=b"e", token="t", timeout_s=5)
    assert pool.assign(server, b"hang", taken=b"e", token="t", timeout_s=5)
    assert not pool.assign(server, b"x", taken=b"e", token="t", timeout_s=5)
    pool.kill_all()


def assign_hang(pool: Pool, grain: str, timeout_s: float) -> Child:
    """Fork a task server and assign it a task that hangs with ``timeout_s``."""
    child = pool.fork(serve_tasks, grain=grain, tasks=True)
    assert pool.assign(child, b"hang", taken=b"event", token="token-1", timeout_s=timeout_s)
    return child


@pytest.mark.timeout(10)
def test_wait_deadlineFromAssignment_killsGroupAfterGrace() -> None:
    """The deadline starts at the assignment; past it plus grace the group is killed and the
    end is States.Timeout (time comes from the injected clock)."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock)
    child = assign_hang(pool, "slow", 10.0)
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
def test_assign_longTask_deadlineCappedAtMaxTimeout() -> None:
    """A task asking for more than the pool's max_timeout_s gets the cap."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, max_timeout_s=2.0)
    child = assign_hang(pool, "long", 1e9)
    assert child.timeout_s == 2.0 and child.kill_at == pytest.approx(clock.now + 3.0)
    clock.now += 3.0
    (ended,) = until_ended(pool)
    assert child.timed_out and ended.outcome().error == "States.Timeout"


@pytest.mark.timeout(10)
def test_turn_forgedExtraResult_droppedAndDeadlineKept() -> None:
    """The pipe is writable by the grain: a second result nobody asked for is dropped, so
    the child cannot shed the deadline of a task it was not given."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, max_timeout_s=5.0)
    child = pool.fork(serve_tasks, grain="forger", tasks=True)
    assert pool.assign(child, b"forge", taken=b"event", token="t", timeout_s=5.0)
    assert until_delivered(pool) == [child]
    assert child.result is not None and child.result.output == "forged"
    assert pool.wait(0.1) == []  # the second result is read and dropped
    assert child.served == 1 and not child.busy
    pool.kill_all()


@pytest.mark.timeout(10)
def test_wait_idleAfterServingPastIdleLimit_isKilled() -> None:
    """A child idle after serving a task is killed once idle_limit_s passed without another;
    before that it is left alone."""
    clock = FakeClock()
    pool = Pool(grace_s=1.0, clock=clock, idle_limit_s=5.0)
    child = pool.fork(serve_tasks, grain="reused", tasks=True)
    assert pool.assign(child, b"task", taken=b"event", token="t", timeout_s=1.0)
    until_delivered(pool)
    assert not child.busy and child.kill_at is None
    clock.now += 4.0
    assert pool.wait(0.05) == [] and not child.killed
    clock.now += 1.5
    (ended,) = until_ended(pool)
    assert child.killed and not child.timed_out and not ended.clean
    assert os.WTERMSIG(ended.status) == signal.SIGKILL


@pytest.mark.timeout(10)
def test_wait_crashInTask_isExplainedWithItsTask() -> None:
    """A child that dies in its task keeps what it was given, and its end names the signal."""
    pool = Pool(grace_s=0.3)
    child = pool.fork(serve_tasks, grain="g", tasks=True)
    assert pool.assign(child, b"segfault", taken=b"event", token="token-1", timeout_s=5)
    (ended,) = until_ended(pool)
    assert not ended.clean
    assert (child.taken, child.token) == (b"event", "token-1")
    assert ended.outcome().cause == "grain 'g' process was killed by signal SIGSEGV (11)"


@pytest.mark.timeout(10)
def test_fork_childHoldsNoOtherChildsPipes() -> None:
    """A child has neither its siblings' pipes nor the parent's ends of its own: a grain
    cannot read another instance's frames or hand it a task."""
    pool = Pool(grace_s=0.3)
    first = pool.fork(serve_tasks, grain="g", tasks=True)

    def pipes_held(channel: Channel) -> None:
        inodes = []
        for fd in range(3, 256):
            with contextlib.suppress(OSError):
                inodes.append(os.fstat(fd).st_ino)
        channel.deliver(GrainResult(output=inodes))

    second = pool.fork(pipes_held, grain="g")
    (ended,) = until_ended(pool)
    assert ended.child is second
    assert second.result is not None
    held = set(second.result.output)
    assert first.tasks_fd is not None
    others = {os.fstat(fd).st_ino for fd in (first.fd, first.tasks_fd)}
    assert not held & others
    pool.kill_all()


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
    idle = pool.fork(serve_tasks, grain="g", tasks=True)
    busy = assign_hang(pool, "g", 30)
    assert busy.busy and not idle.busy
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
    channel.deliver(GrainResult(output=grandchild))


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
        if child.result is not None:
            os.kill(child.result.output, signal.SIGKILL)


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

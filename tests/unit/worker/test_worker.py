"""GrainWorker on the shared fork model: the worker steps each event up to its task, an
instance forked for it runs only the grain (or up to ``events_per_instance`` tasks in the
reuse mode), and the worker goes on with the result, or fails the task of an instance that
did not deliver one (no Redis: in-memory twins)."""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest
from sand.app import AppSpec, GrainSpec, Limits
from sand.grain.child import ChildSetup, prepare_parent
from sand.grain.pool import Ended, Pool, prepare_task_pipe
from sand.grain.result import GrainError, GrainResult
from sand.grain.zygote import Zygote
from sand.localbus import LocalBus
from sand_bus.ttypes import EventKind, EventMessage
from sand_worker.bus import encode
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain
from sand_worker.worker import QUIET_AFTER_S, GrainWorker


@dataclass(frozen=True)
class FakeCall:
    token: str


@dataclass(frozen=True)
class FakePending:
    raw: bytes
    task: bytes
    call: FakeCall
    timeout_s: float = 5.0


class FakeBus:
    """Takes the metrics' pipelines (counted, not sent) and serves the app's stopped
    executions (``stopped``; reads counted)."""

    def __init__(self) -> None:
        self.pipelines = 0
        self.stopped: list[bytes] = []
        self.stop_reads = 0

    def zrevrange(self, key: str, start: int, end: int) -> list[bytes]:
        self.stop_reads += 1
        return self.stopped

    def pipeline(self, transaction: bool = False) -> FakeBus:
        self.pipelines += 1
        return self

    def hincrby(self, *args: object) -> FakeBus:
        return self

    def execute(self) -> list[object]:
        return []

    def close_inherited(self) -> None:
        pass


@dataclass
class FakeEventHandler:
    """Steps an event by its name: its task is the event itself, run in the instance."""

    client: FakeBus = field(default_factory=FakeBus)
    completed: list[tuple[bytes, GrainResult, str | None]] = field(default_factory=list)
    failed: list[tuple[bytes, GrainResult]] = field(default_factory=list)
    dropped: list[bytes] = field(default_factory=list)

    def drop(self, raw: bytes, pending: object = None) -> None:
        self.dropped.append(raw)

    def begin(self, raw: bytes) -> FakePending | None:
        if raw == b"undecodable":
            raise RuntimeError("cannot decode the event")
        if raw == b"no-task":
            return None
        return FakePending(raw, raw, FakeCall(f"token-{raw.decode()}"))

    def complete(self, pending: FakePending, result: GrainResult, wrote: str | None) -> None:
        self.completed.append((pending.raw, result, wrote))

    def fail_event(self, raw: bytes, result: GrainResult) -> None:
        self.failed.append((raw, result))

    def warm_up_task(self) -> None:
        self.warmed = True  # in the instance: nothing the parent sees

    def run_task(self, task: bytes) -> tuple[GrainResult, str | None]:
        if task == b"segfault":
            faulthandler.disable()  # pytest enables it; its dump would only be noise here
            os.kill(os.getpid(), signal.SIGSEGV)
        if task == b"timeout":
            return GrainResult.failure(GrainError.TIMEOUT, "grain 'g' did not finish"), None
        return GrainResult(output={"ran": task.decode(), "pid": os.getpid()}), "wrote"


class Harness:
    """A worker with a fake handler and a real pool, driven turn by turn."""

    def __init__(self, *, events_per_instance: int = 1, max_concurrency: int = 4) -> None:
        config = WorkerConfig.from_env(
            {
                "SAND_APP": "app",
                "SAND_APP_DIR": "/nonexistent",
                "SAND_REDIS_SOCKET": "/nonexistent",
                "SAND_MAX_CONCURRENCY": str(max_concurrency),
            }
        )
        grains = {"g": GrainSpec("g", Path("/nonexistent/g.py"), events_per_instance)}
        app = AppSpec("app", Path("/nonexistent"), grains, {}, None, Limits(), None)
        self.worker = GrainWorker(Grain(app, "g", lambda e, c: None), config)
        self.handler = FakeEventHandler()
        self.worker._handler = cast(EventHandler, self.handler)  # what run() builds
        setup = ChildSetup(die_with_parent=True)
        prepare_parent(setup)
        self.zygote = Zygote.start(self.worker._serve, setup, prepare_tasks=prepare_task_pipe)
        self.pool = Pool(grace_s=0.3, setup=setup, idle_limit_s=30, zygote=self.zygote)
        self.ended: dict[int, Ended] = {}
        self.closed = False

    def take(self, *events: bytes) -> None:
        for raw in events:
            client = cast(LocalBus, self.handler.client)
            self.worker._take(cast(EventHandler, self.handler), client, self.pool, raw)

    def until_settled(self, count: int, within_turns: int = 100) -> None:
        """Run turns until ``count`` events were completed or failed."""
        for _ in range(within_turns):
            done = len(self.handler.completed) + len(self.handler.failed)
            if done >= count:
                return
            self.turn()
        raise AssertionError(f"{count} events not settled: {self.handler}")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.pool.kill_all()
        self.zygote.close()
        os.waitpid(self.zygote.pid, 0)

    def until_ended(self, pid: int, within_turns: int = 100) -> Ended:
        for _ in range(within_turns):
            if pid in self.ended:
                return self.ended[pid]
            self.turn()
        raise AssertionError(f"instance {pid} did not end")

    def turn(self) -> None:
        handler = cast(EventHandler, self.handler)
        self.worker._assign_waiting(handler, self.pool)
        turn = self.pool.turn(0.05)
        self.ended.update({end.child.pid: end for end in turn.ended})
        self.worker._after_turn(handler, self.pool, turn.delivered, turn.ended)


@pytest.fixture
def harness() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


@pytest.mark.timeout(10)
def test_task_runsInAFreshInstance_completedWithItsResultAndWrites(harness: Harness) -> None:
    """Each task runs in a process of its own, and the worker completes the event with the
    result and the global writes the instance reported."""
    harness.take(b"a", b"b")
    harness.until_settled(2)
    results = {raw: (result, wrote) for raw, result, wrote in harness.handler.completed}
    assert results[b"a"][0].output["ran"] == "a" and results[b"a"][1] == "wrote"
    pids = {result.output["pid"] for result, _ in results.values()}
    assert len(pids) == 2 and os.getpid() not in pids
    harness.close()


@pytest.mark.timeout(10)
def test_quietWorker_readsStoppedExecutionsAtItsNextTake_andDropsTheirEvents(
    harness: Harness,
) -> None:
    """An idle worker does not re-read the stopped executions on a timer (it would wake 4
    times a second for nothing); the first event after the quiet spell reads them first,
    so an event of an execution stopped meanwhile is still dropped, not run."""
    worker, client = harness.worker, harness.handler.client
    assert not worker._watching_stops(harness.pool, now=QUIET_AFTER_S + 1)
    client.stopped = [b"stopped-1"]
    stopped = encode(EventMessage(execution_id="stopped-1", kind=EventKind.TASK))
    harness.take(stopped)
    assert client.stop_reads == 1 and harness.handler.dropped == [stopped]
    assert not harness.pool.children and not harness.pool.forking
    # now busy lately: the view stays fresh for REFRESH_S, the next take reads nothing
    assert worker._watching_stops(harness.pool, now=worker._clock())
    other = encode(EventMessage(execution_id="running-1", kind=EventKind.TASK))
    harness.take(other)
    harness.until_settled(1)
    assert client.stop_reads == 1 and harness.handler.dropped == [stopped]
    handled = [raw for raw, _, _ in harness.handler.completed] + [
        raw for raw, _ in harness.handler.failed
    ]
    assert handled == [other]  # given to an instance, not dropped


@pytest.mark.timeout(10)
def test_eventWithoutTask_handledWholeInTheWorker_noInstance(harness: Harness) -> None:
    harness.take(b"no-task")
    assert not harness.pool.children and not harness.pool.forking
    assert not harness.worker._waiting


@pytest.mark.timeout(10)
def test_instance_crashInTask_failsThatTaskNamingTheSignal(harness: Harness) -> None:
    """An instance killed by a signal in its task fails that task, with the signal named."""
    harness.take(b"segfault")
    harness.until_settled(1)
    ((raw, result, wrote),) = harness.handler.completed
    assert (raw, result.error, wrote) == (b"segfault", "States.TaskFailed", None)
    assert result.cause == "grain 'g' process was killed by signal SIGSEGV (11)"
    assert harness.handler.client.pipelines == 1  # counted as a lost task
    harness.close()


@pytest.mark.timeout(10)
def test_eventThatCannotBeStepped_failsItsExecutionAsRuntime(harness: Harness) -> None:
    harness.take(b"undecodable")
    ((raw, result),) = harness.handler.failed
    assert (raw, result.error) == (b"undecodable", "States.Runtime")
    assert "RuntimeError: cannot decode the event" in (result.cause or "")
    assert not harness.pool.children and not harness.pool.forking


@pytest.mark.timeout(10)
def test_tasksBeyondConcurrency_waitForAnInstance() -> None:
    """With max_concurrency 1, a second task waits until the first instance is done."""
    harness = Harness(max_concurrency=1)
    harness.take(b"a", b"b")
    assert harness.pool.forking == 1 and len(harness.worker._waiting) == 2
    harness.until_settled(2)
    assert [raw for raw, _, _ in harness.handler.completed] == [b"a", b"b"]
    harness.close()


@pytest.mark.timeout(10)
def test_reuse_oneInstanceServesItsTasksInSequence_thenExitsClean() -> None:
    """With events_per_instance 3, one process serves three tasks, then exits clean."""
    harness = Harness(events_per_instance=3, max_concurrency=1)
    harness.take(b"a", b"b", b"c")
    harness.until_settled(3)
    pids = {result.output["pid"] for _, result, _ in harness.handler.completed}
    assert len(pids) == 1
    (pid,) = pids
    assert harness.until_ended(pid).clean
    harness.close()


@pytest.mark.timeout(10)
def test_reuse_crashOnSecondTask_failsOnlyThatTask() -> None:
    harness = Harness(events_per_instance=5, max_concurrency=1)
    harness.take(b"a", b"segfault", b"c")
    harness.until_settled(3)
    outcomes = {raw: result.error for raw, result, _ in harness.handler.completed}
    assert outcomes == {b"a": None, b"segfault": "States.TaskFailed", b"c": None}
    harness.close()


@pytest.mark.timeout(10)
def test_reuse_grainTimedOut_nextTaskGetsAFreshInstance() -> None:
    """After a grain timed out in it, an instance serves no further task (its state is
    unknown): the next one runs in a new process."""
    harness = Harness(events_per_instance=5, max_concurrency=1)
    harness.take(b"a", b"timeout", b"c")
    harness.until_settled(3)
    ran = {raw: result for raw, result, _ in harness.handler.completed}
    assert ran[b"timeout"].error == GrainError.TIMEOUT
    assert ran[b"a"].output["pid"] != ran[b"c"].output["pid"]
    harness.close()


@pytest.mark.timeout(10)
def test_idleInstance_retired_exitsCleanNothingReported(harness: Harness) -> None:
    harness.pool.request_fork("g")
    while not (forked := harness.pool.turn(0.1).forked):
        pass
    (child,) = forked
    harness.pool.retire(child)
    assert harness.until_ended(child.pid).clean
    assert harness.handler.completed == [] and harness.handler.failed == []

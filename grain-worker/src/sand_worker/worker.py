"""The grain worker: one per grain; runs each event's task in a fresh instance, forked ahead.

(Or, when the app opts in with ``events_per_instance: N`` for the grain, one
instance per N tasks in sequence: the reuse mode, decision 0010.)

The worker takes the grain's events from its queue itself (one BRPOP in flight on a
connection of its own, answered inside the monitoring loop's ``select``), steps the
workflow up to the grain's task and hands that task to an instance, then finishes the
step with the instance's result and sends what it produced (decision 0029). An instance
runs only the grain: the bus, the engine, the history and the metrics stay in the
warm worker, so a fresh process touches (and copies) as few pages as possible. It
keeps ``prefork`` children forked *before* tasks arrive, idle on their task pipe, and
forks their replacements once busy ones are done, up to ``max_concurrency`` instances
in flight; beyond that events wait in the queue. Every task still gets a fresh
process, which exits after it.

The fork model is :mod:`sand.grain`'s: a :class:`~sand.grain.pool.Pool` forks
the children (own process group, default signals, tied to the worker's life)
and runs the monitoring loop — it kills an instance's process group after its
task deadline plus grace, and explains every abnormal end. This module reports
such an end as a failed task, so no event that was taken is lost silently.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable

from sand import keys
from sand.contracts import READY_TTL_S
from sand.grain.channel import Channel
from sand.grain.child import ChildSetup, prepare_parent
from sand.grain.limits import MemoryWatch
from sand.grain.pool import Child, Ended, Pool, prepare_task_pipe
from sand.grain.result import GrainError, GrainResult
from sand.grain.zygote import Zygote, ZygoteGone
from sand.localbus import BusError, LocalBus

from sand_worker.aborts import REFRESH_S, AbortedExecutions
from sand_worker.bus import connect, decode, warm_up
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain, Pending
from sand_worker.metrics import GrainMetrics

# While an idle child remains, the worker waits this long after a task was assigned
# before it forks a replacement, unless the busy instances finish first.
REFILL_DELAY_S = 0.05
# The worker's BRPOP on the grain's queue: at a stop, an event it popped meanwhile is
# handed back, so a stop waits for at most this.
TAKE_TIMEOUT_S = 1
# After a failed BRPOP (Redis away), the next try.
TAKE_RETRY_S = 0.5
# A reused instance left without a task this long after its last one is retired.
IDLE_LIMIT_S = 5.0
# A worker that took no event for this long, with no instance busy, stops re-reading the
# app's stopped executions every REFRESH_S: the first event after the quiet spell reads
# them before it is handled (decision 0030), so an idle worker wakes only for its BRPOP.
QUIET_AFTER_S = 2.0
# An instance's oom_score_adj (-1000..1000, 0 the default): at the sandbox's memory limit
# the kernel kills instances before the worker or the sandbox's main process (decision 0022).
INSTANCE_OOM_SCORE_ADJ = 500
# After a fork failed (the sandbox's pids limit), the next try.
FORK_RETRY_S = 0.05
# How often, at most, the worker reports a changed count of busy instances (``in_flight``):
# admission counts them with the queue (decision 0023), and the frontends' adaptive bound
# (decision 0032) acts on that count, which a report every READY_TTL_S / 3 left seconds old.
IN_FLIGHT_REPORT_S = 0.1
# How long busy instances get to finish after SIGTERM; the supervisor kills the worker
# STOP_GRACE_S (2 s) after its SIGTERM, so that a whole sandbox stops within 3 s.
SHUTDOWN_S = 1.5


class GrainWorker:
    """Serves one grain until SIGTERM. ``run`` blocks."""

    def __init__(
        self, grain: Grain, config: WorkerConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._grain = grain
        self._config = config
        self._clock = clock
        self._stopping = False
        self._queue = keys.queue_key(config.app, grain.name)
        self._handler: EventHandler | None = None
        self._metrics = GrainMetrics(config.app, grain.name)
        # made before any fork: every instance sees the worker's latest view (decision 0018)
        self._aborted = AbortedExecutions(config.app)
        self._taker: LocalBus | None = None  # the connection of the worker's BRPOP
        self._waiting: deque[Pending] = deque()  # tasks no instance could take yet
        self._assigned: dict[int, Pending] = {}  # by instance pid
        self._fork_retry_at = 0.0  # after a fork failed
        self._aborts_at = 0.0  # when the view of stopped executions is next read
        self._took_at = -math.inf  # when the last event was taken

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        client = connect(self._config)
        taker = self._taker = connect(self._config)
        # Built once here and inherited by every child: workflow engines, stores and the
        # client (a forked child opens a connection of its own if its grain uses data).
        handler = self._handler = EventHandler(self._grain, self._config, client)
        setup = ChildSetup(die_with_parent=True, oom_score_adj=INSTANCE_OOM_SCORE_ADJ)
        prepare_parent(setup)
        warm_up()
        # Objects alive now are never freed: keep the collector from touching
        # (and copying) their pages in every child.
        gc.collect()
        gc.freeze()
        # The zygote forks the instances from here on: this process never forks again,
        # so its own work after a fork costs no copy-on-write faults (decision 0029).
        zygote = Zygote.start(self._serve, setup, prepare_tasks=prepare_task_pipe)
        pool = Pool(
            grace_s=self._config.grace_s,
            setup=setup,
            clock=self._clock,
            # no task runs longer than the app allows
            max_timeout_s=self._grain.app.limits.timeout_s,
            idle_limit_s=IDLE_LIMIT_S,
            memory=MemoryWatch.find(),
            zygote=zygote,
        )
        _log(
            self._grain.name,
            "worker ready",
            pid=os.getpid(),
            prefork=self._config.prefork,
            events_per_instance=self._grain.events_per_instance,
        )
        wake_fd = _signal_wake_fd()
        try:
            self._loop(handler, client, taker, pool, wake_fd)
        except ZygoteGone as exc:
            # Its instances died with it: their tasks fail, explained; the supervisor
            # restarts this worker (and so a zygote).
            _log(self._grain.name, "the zygote is gone", error=str(exc))
            if self._stopping:  # the sandbox is being stopped: say so, and leave quietly
                self._fail_all(handler, _stopped_failure(self._config.app, self._grain.name))
                return
            lost = f"the instances of grain '{self._grain.name}' were lost: {exc}"
            self._fail_all(handler, GrainResult.failure(GrainError.RUNTIME, lost))
            raise
        finally:
            zygote.close()

    def _loop(
        self, handler: EventHandler, client: LocalBus, taker: LocalBus, pool: Pool, wake_fd: int
    ) -> None:
        ready_at = take_at = in_flight_at = 0.0
        reported = -1  # the busy count last reported
        taking: int | None = None  # the taker's fd while its BRPOP is in flight
        while not self._stopping:
            self._assign_waiting(handler, pool)
            refill_at = self._fill_pool(pool)
            now = self._clock()
            if now >= ready_at:
                app, grain = self._config.app, self._grain.name
                client.set(keys.ready_key(app, grain), os.getpid(), ex=READY_TTL_S)
                if self._grain.broken is not None:
                    # taking events (each fails, explained) but not healthy: the cluster
                    # view says why
                    client.set(keys.broken_key(app, grain), self._grain.broken, ex=READY_TTL_S)
                ready_at = now + READY_TTL_S / 3
                reported = -1  # refreshed with the readiness key, changed or not
            busy = sum(1 for c in pool.children if c.busy)
            if busy != reported and now >= in_flight_at:
                self._metrics.in_flight(client, busy)
                reported, in_flight_at = busy, now + IN_FLIGHT_REPORT_S
            watching = self._watching_stops(pool, now)
            if watching and now >= self._aborts_at:
                self._stop_aborted(client, pool)
            if taking is None and now >= take_at and self._has_room(pool):
                try:
                    taking = taker.send("BRPOP", self._queue, TAKE_TIMEOUT_S)
                except BusError as exc:
                    _log(self._grain.name, "cannot take events", error=str(exc))
                    take_at = now + TAKE_RETRY_S
            # Sleep until the next thing due (an event, a child's frame or exit, a signal
            # and the pool's own deadlines end the wait sooner): an idle worker does not tick.
            aborts_at = self._aborts_at if watching else math.inf
            due = min(ready_at, aborts_at, refill_at, math.inf if taking else take_at)
            if busy != reported:
                due = min(due, in_flight_at)  # a changed count not yet reported
            turn = pool.turn(
                max(0.0, due - self._clock()),
                wake_fd=wake_fd,
                fds=() if taking is None else (taking,),
            )
            self._after_turn(handler, pool, turn.delivered, turn.ended)
            if turn.fork_failures:
                # The sandbox's pids limit (a grain's fork bomb, until its deadline kills its
                # process group): serve with the instances there are, fork again soon.
                _log(self._grain.name, "cannot fork an instance", error=turn.fork_failures[-1])
                self._fork_retry_at = self._clock() + FORK_RETRY_S
            if taking is not None and taking in turn.ready:
                taking = None
                raw = self._taken(taker)
                if raw is not None:
                    self._take(handler, client, pool, raw)
        self._shut_down(handler, pool, taking)

    def _fail_all(self, handler: EventHandler, failure: GrainResult) -> None:
        """Fail every task this worker holds (assigned or waiting) with ``failure``."""
        for pending in [*self._assigned.values(), *self._waiting]:
            self._guarded(handler.complete, pending, failure, None)
        self._assigned.clear()
        self._waiting.clear()

    def _on_term(self, signum: int, frame: object) -> None:
        self._stopping = True

    # -- events ------------------------------------------------------------------------

    def _has_room(self, pool: Pool) -> bool:
        """Whether another task could run now (busy instances and waiting tasks below the
        grain's concurrency): else events wait in the queue."""
        busy = sum(1 for c in pool.children if c.busy)
        return busy + len(self._waiting) < self._config.max_concurrency

    def _taken(self, taker: LocalBus) -> bytes | None:
        """The event the BRPOP in flight popped (its reply is there), or None."""
        try:
            item = taker.receive()
        except BusError as exc:
            _log(self._grain.name, "cannot take events", error=str(exc))
            return None
        return None if item is None else bytes(item[1])

    def _take(self, handler: EventHandler, client: LocalBus, pool: Pool, raw: bytes) -> None:
        """Handle event ``raw`` up to its task, and give that to an instance."""
        self._took_at = now = self._clock()
        if now >= self._aborts_at:  # after a quiet spell: the view may be stale
            self._stop_aborted(client, pool)
        if self._of_stopped(raw):
            self._guarded(handler.drop, raw)  # its execution was stopped: it ends here
            return
        try:
            pending = handler.begin(raw)
        except Exception as exc:  # a bug or an undecodable event: its execution fails
            traceback.print_exc()
            failure = GrainResult.failure(
                GrainError.RUNTIME,
                f"grain worker '{self._grain.name}' could not handle an event of this "
                f"execution: {type(exc).__name__}: {exc}",
            )
            self._guarded(handler.fail_event, raw, failure)
            return
        if pending is not None:
            self._waiting.append(pending)
            self._assign_waiting(handler, pool)

    def _assign_waiting(self, handler: EventHandler, pool: Pool) -> None:
        """Give waiting tasks to idle instances, forking one when none is idle."""
        while self._waiting:
            pending = self._waiting[0]
            if self._of_stopped(pending.raw):
                self._waiting.popleft()
                self._guarded(handler.drop, pending.raw, pending)
                continue
            child = self._idle_child(pool, fresh=pool.needs_fresh(pending.task))
            if child is None:
                # The tasks wait for instances the zygote forks (a turn away), up to the
                # grain's concurrency; a fork that failed (the pids limit) is retried later.
                if self._clock() >= self._fork_retry_at:
                    room = self._config.max_concurrency - len(pool.children) - pool.forking
                    for _ in range(min(len(self._waiting) - pool.forking, room)):
                        pool.request_fork(self._grain.name)
                return
            if pool.assign(
                child,
                pending.task,
                taken=pending.raw,
                token=pending.call.token,
                timeout_s=pending.timeout_s,
            ):
                self._assigned[child.pid] = self._waiting.popleft()

    def _idle_child(self, pool: Pool, *, fresh: bool) -> Child | None:
        """An idle instance (one that has run no task yet when ``fresh``), oldest first."""
        for child in pool.children:
            if _idle(child) and not (fresh and child.served):
                return child
        return None

    def _after_turn(
        self, handler: EventHandler, pool: Pool, delivered: list[Child], ended: list[Ended]
    ) -> None:
        for child in delivered:
            if child.served >= self._grain.events_per_instance or (
                child.result is not None and child.result.error == GrainError.TIMEOUT
            ):
                # it exits after this result (_serve): no task may be given to it meanwhile
                pool.retire(child)
            pending = self._assigned.pop(child.pid, None)
            if pending is not None and child.result is not None:
                self._guarded(handler.complete, pending, child.result, child.wrote)
        for end in ended:
            self._report(handler, end)

    def _guarded(self, call: Callable[..., None], *args: object) -> None:
        """Run a step of an event; one that raises (Redis away) is logged, and the event is
        left to the global bus's replay of its backup."""
        try:
            call(*args)
        except Exception:  # a background loop logs and keeps going
            traceback.print_exc()

    def _fill_pool(self, pool: Pool) -> float:
        """Fork children up to ``prefork`` idle ones; returns when to try again (the pool
        clock; infinity when nothing waits to be forked)."""
        children = pool.children
        idle = sum(1 for c in children if _idle(c))
        busy = len(children) - idle
        idle += pool.forking
        last_take = max((c.taken_at for c in children if c.taken_at is not None), default=0.0)
        if idle >= 1 and busy and self._clock() - last_take < REFILL_DELAY_S:
            # A fork and the new child's set-up cost a few ms of CPU: on a 2-core host they
            # would compete with the instance that just took a task. While an idle child
            # is still waiting, refill once the busy ones are done (or after a short delay).
            return last_take + REFILL_DELAY_S
        if self._clock() < self._fork_retry_at:
            return self._fork_retry_at
        while idle < self._config.prefork and len(children) + pool.forking < (
            self._config.max_concurrency
        ):
            pool.request_fork(self._grain.name)
            idle += 1
        return math.inf

    def _watching_stops(self, pool: Pool, now: float) -> bool:
        """Whether the view of stopped executions is kept fresh now: while an instance is
        busy, a task waits, or an event was taken lately."""
        return (
            bool(self._waiting)
            or now - self._took_at < QUIET_AFTER_S
            or any(c.busy for c in pool.children)
        )

    def _stop_aborted(self, client: LocalBus, pool: Pool) -> None:
        """Publish the app's stopped executions to the instances, and kill the instances
        serving one of them now."""
        self._aborts_at = self._clock() + REFRESH_S
        try:
            stopped = self._aborted.refresh(client)
        except Exception as exc:  # Redis away: the next tick tries again
            _log(self._grain.name, "cannot read stopped executions", error=str(exc))
            return
        if not stopped:
            return
        for child in list(pool.children):
            if child.taken is None or child.killed:
                continue
            execution_id = decode(child.taken).execution_id
            if execution_id in stopped:
                pool.kill(child)
                _log(
                    self._grain.name,
                    "instance killed: its execution was stopped",
                    pid=child.pid,
                    execution=execution_id,
                )

    def _of_stopped(self, raw: bytes) -> bool:
        """Whether event ``raw`` belongs to a stopped execution (as of the last refresh; it
        is decoded only while some execution of the app is stopped)."""
        return self._aborted.any() and self._aborted.contains(decode(raw).execution_id)

    def _report(self, handler: EventHandler, ended: Ended) -> None:
        """Fail the task of an instance that ended without delivering its result."""
        child = ended.child
        pending = self._assigned.pop(child.pid, None)
        if pending is None:
            return  # idle, retired, or its result was delivered
        if self._of_stopped(pending.raw):
            # killed because its execution was stopped: nothing of it goes on
            self._guarded(handler.drop, pending.raw, pending)
            return
        result = ended.outcome()
        if self._stopping and _terminated(ended.status):
            # the platform stopped the sandbox (SIGTERM to the worker, passed on to busy
            # instances): not the grain's failure, and the user must be told what it was
            result = _stopped_failure(self._config.app, self._grain.name)
        _log(
            self._grain.name,
            "instance failed",
            pid=child.pid,
            error=result.error,
            cause=result.cause,
        )
        self._guarded(handler.complete, pending, result, child.wrote)
        timed_out = child.timed_out
        self._guarded(lambda: self._metrics.lost(handler.client, result, timed_out=timed_out))

    def _shut_down(self, handler: EventHandler, pool: Pool, taking: int | None) -> None:
        """SIGTERM busy instances (they may still finish) and wait for them; hand an event
        popped meanwhile back to the queue; fail the tasks no instance took."""
        pool.terminate()
        give_up = self._clock() + SHUTDOWN_S
        while (pool.children or taking is not None) and (now := self._clock()) < give_up:
            turn = pool.turn(min(0.05, give_up - now), fds=() if taking is None else (taking,))
            self._after_turn(handler, pool, turn.delivered, turn.ended)
            if taking is not None and taking in turn.ready:
                taking = None
                raw = self._taken(self._taker) if self._taker is not None else None
                if raw is not None:
                    # the front of the queue (BRPOP takes from the right): the next worker's
                    self._guarded(handler.client.rpush, self._queue, raw)
        for end in pool.kill_all():
            self._report(handler, end)
        while self._waiting:
            pending = self._waiting.popleft()
            failure = _stopped_failure(self._config.app, self._grain.name)
            self._guarded(handler.complete, pending, failure, None)

    # -- in the child ----------------------------------------------------------------

    def _serve(self, channel: Channel) -> None:
        """The work of one instance: run the tasks the worker assigns, one at a time, up
        to the grain's ``events_per_instance`` (1 unless the app opts in to reuse), and
        deliver each result. A reused instance retires early, so that the next task gets a
        fresh process, when its grain timed out (the interrupted code may have left the
        process in any state)."""
        handler = self._handler
        assert handler is not None
        # The worker's connections are the worker's: a grain must not read its replies.
        for bus in (handler.client, self._taker):
            if bus is not None:
                bus.close_inherited()
        handler.warm_up_task()
        for _ in range(self._grain.events_per_instance):
            task = channel.next_task()
            if task is None:
                return  # retired, or the worker is gone
            result, wrote = handler.run_task(task)
            channel.deliver(result, wrote)
            if result.error == GrainError.TIMEOUT:
                return


def _signal_wake_fd() -> int:
    """The read end of a pipe the signal handlers' wake-ups are written to
    (``signal.set_wakeup_fd``): a SIGTERM ends the loop's wait at once. Python retries a
    ``select`` that a signal interrupted (PEP 475), so without it a stop would wait for the
    next thing due."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    return read_fd


def _idle(child: Child) -> bool:
    """Whether ``child`` can be assigned a task now."""
    return child.tasks_fd is not None and not (child.busy or child.killed or child.eof)


def _terminated(status: int) -> bool:
    """Whether a ``waitpid`` status says the process died of SIGTERM."""
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def _stopped_failure(app: str, grain: str) -> GrainResult:
    return GrainResult.failure(
        GrainError.RUNTIME,
        f"the sandbox of application '{app}' was stopped (a redeploy, an undeploy or the "
        f"host's shutdown) while grain '{grain}' ran this task",
    )


def _log(grain: str, message: str, **fields: object) -> None:
    pairs = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"grain={grain} msg={message!r} {pairs}", file=sys.stderr, flush=True)

"""The grain worker: one per grain; forks one instance per event, ahead of the event.

(Or, when the app opts in with ``events_per_instance: N`` for the grain, one
instance per N events in sequence: the reuse mode, decision 0010.)

The parent imports the grain once and keeps ``prefork`` children forked *before*
events arrive, each blocked on the grain's queue with its own connection
(DESIGN.md: forking after the event costs ~6 ms here, mostly copy-on-write
faults; a child forked ahead takes the event at the cost of a plain consumer).
A child that takes an event tells the parent at once (a TOOK frame), and the
parent forks its replacement, up to ``max_concurrency`` instances in flight;
beyond that events wait in the queue. Every event still gets a fresh process,
which exits after it.

The fork model is :mod:`sand.grain`'s: a :class:`~sand.grain.pool.Pool` forks
the children (own process group, default signals, tied to the worker's life)
and runs the monitoring loop — it kills an instance's process group after its
task deadline (from the child's TASK frame) plus grace, and explains every
abnormal end. This module reports such an end as a failed task, so no event
that was taken is lost silently.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import cast

from sand import keys
from sand.contracts import READY_TTL_S
from sand.grain.channel import Channel, ParentGone
from sand.grain.child import ChildSetup
from sand.grain.limits import MemoryWatch
from sand.grain.pool import Ended, Pool
from sand.grain.result import GrainError, GrainResult
from sand.localbus import LocalBus

from sand_worker.aborts import REFRESH_S, AbortedExecutions
from sand_worker.bus import connect, decode, warm_up
from sand_worker.config import WorkerConfig
from sand_worker.instance import EventHandler, Grain
from sand_worker.metrics import GrainMetrics

# While an idle child remains, the worker waits this long after an event was taken
# before it forks a replacement, unless the busy instances finish first.
REFILL_DELAY_S = 0.05
# An idle child wakes this often to notice that its parent is gone.
BRPOP_TIMEOUT_S = 5
# How much longer than one BRPOP timeout a reused instance may stay idle before it is
# killed. Generous: a legitimate instance killed just as it popped an event (before its
# TOOK frame is read) would lose that event, so only one stalled for longer than this
# after its DONE could be hit.
IDLE_SLACK_S = 10.0
# An instance's oom_score_adj (-1000..1000, 0 the default): at the sandbox's memory limit
# the kernel kills instances before the worker or the sandbox's main process (decision 0022).
INSTANCE_OOM_SCORE_ADJ = 500
# After a fork failed (the sandbox's pids limit), the next try.
FORK_RETRY_S = 0.05
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

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        client = connect(self._config)
        # Built once here and inherited by every child: workflow engines, stores and the
        # client (redis-py's pool opens a fresh connection in a forked child).
        reporter = EventHandler(self._grain, self._config, client)
        self._handler = reporter
        pool = Pool(
            grace_s=self._config.grace_s,
            setup=ChildSetup(die_with_parent=True, oom_score_adj=INSTANCE_OOM_SCORE_ADJ),
            clock=self._clock,
            # no task runs longer than the app allows, whatever a grain writes to its pipe
            max_timeout_s=self._grain.app.limits.timeout_s,
            # a reused instance retires after one empty BRPOP; one still there well after
            # that is not waiting for events (a grain that forged DONE): killed
            idle_limit_s=BRPOP_TIMEOUT_S + IDLE_SLACK_S + self._config.grace_s,
            memory=MemoryWatch.find(),
        )
        warm_up()
        # Objects alive now are never freed: keep the collector from touching
        # (and copying) their pages in every child.
        gc.collect()
        gc.freeze()
        ready_at = 0.0
        aborts_at = 0.0
        _log(
            self._grain.name,
            "worker ready",
            pid=os.getpid(),
            prefork=self._config.prefork,
            events_per_instance=self._grain.events_per_instance,
        )
        wake_fd = _signal_wake_fd()
        while not self._stopping:
            refill_at = self._fill_pool(pool)
            now = self._clock()
            if now >= ready_at:
                client.set(
                    keys.ready_key(self._config.app, self._grain.name), os.getpid(), ex=READY_TTL_S
                )
                ready_at = now + READY_TTL_S / 3
                self._metrics.in_flight(client, sum(1 for c in pool.children if c.busy))
            if now >= aborts_at:
                self._stop_aborted(client, pool)
                aborts_at = now + REFRESH_S
            # Sleep until the next thing due (a child's frame or exit, a signal and the pool's
            # own deadlines end the wait sooner): an idle worker does not tick.
            due = min(ready_at, aborts_at, refill_at) - self._clock()
            for ended in pool.wait(max(0.0, due), wake_fd=wake_fd):
                self._report(reporter, ended)
        for ended in pool.stop(within_s=SHUTDOWN_S):
            self._report(reporter, ended)

    def _on_term(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _fill_pool(self, pool: Pool) -> float:
        """Fork children up to ``prefork`` idle ones; returns when to try again (the pool
        clock; infinity when nothing waits to be forked)."""
        children = pool.children
        idle = sum(1 for c in children if c.taken is None)
        busy = len(children) - idle
        last_take = max((c.taken_at for c in children if c.taken_at is not None), default=0.0)
        if idle >= 1 and busy and self._clock() - last_take < REFILL_DELAY_S:
            # A fork and the new child's set-up cost a few ms of CPU: on a 2-core host they
            # would compete with the instance that just took an event. While an idle child
            # is still waiting, refill once the busy ones are done (or after a short delay).
            return last_take + REFILL_DELAY_S
        while idle < self._config.prefork and len(children) < self._config.max_concurrency:
            try:
                pool.fork(self._serve, grain=self._grain.name)
            except OSError as exc:
                # The sandbox's pids limit is reached (a grain's fork bomb, until its deadline
                # kills its process group): serve with the children there are, fork again soon.
                _log(self._grain.name, "cannot fork an instance", error=str(exc))
                return self._clock() + FORK_RETRY_S
            idle += 1
        return math.inf

    def _stop_aborted(self, client: LocalBus, pool: Pool) -> None:
        """Publish the app's stopped executions to the instances, and kill the instances
        serving one of them now."""
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

    def _report(self, reporter: EventHandler, ended: Ended) -> None:
        """Fail the task of an instance that took an event and did not end clean."""
        child = ended.child
        if ended.clean or child.taken is None:
            return
        if self._of_stopped(child.taken):
            # killed because its execution was stopped: nothing of it goes on
            try:
                reporter.drop(child.taken)
            except Exception:  # a background loop logs and keeps going
                traceback.print_exc()
            return
        result = ended.outcome()
        if self._stopping and _terminated(ended.status) and child.result is None:
            # the platform stopped the sandbox (SIGTERM to the worker, passed on to busy
            # instances): not the grain's failure, and the user must be told what it was
            result = GrainResult.failure(
                GrainError.RUNTIME,
                f"the sandbox of application '{self._config.app}' was stopped (a redeploy, an "
                f"undeploy or the host's shutdown) while grain '{self._grain.name}' ran this task",
            )
        elif child.token is None:
            result = GrainResult.failure(
                GrainError.RUNTIME,
                f"the instance of grain '{self._grain.name}' failed before running its task "
                f"({result.cause})",
            )
        _log(
            self._grain.name,
            "instance failed",
            pid=child.pid,
            error=result.error,
            cause=result.cause,
        )
        try:
            reporter.fail_task(child.taken, child.token, result)
            self._metrics.lost(reporter.client, result, timed_out=child.timed_out)
        except Exception:  # a background loop logs and keeps going
            traceback.print_exc()

    # -- in the child ----------------------------------------------------------------

    def _serve(self, channel: Channel) -> None:
        """The work of one instance: take events from the queue and handle them, one at a
        time, up to the grain's ``events_per_instance`` (1 unless the app opts in to reuse).

        A reused instance tells the parent after each event that it is idle again (DONE),
        and retires early, so that the next event gets a fresh process, when its grain
        timed out (the interrupted code may have left the process in any state) or when
        it waited a whole BRPOP timeout for an event (idle instances give memory back;
        the parent keeps ``prefork`` fresh ones waiting).
        """
        handler = self._handler
        assert handler is not None
        client = handler.client
        # Open this child's connection (and log in) now, while no event waits. (Pre-
        # touching the codec's pages here as well cost 4 ms of CPU per child on this
        # kind of VM, more than it saved on the critical path; measured, then dropped.)
        client.ping()
        limit = self._grain.events_per_instance
        for served in range(limit):
            raw = self._take(client, channel, retire_when_idle=served > 0)
            if raw is None:
                return
            if self._of_stopped(raw):
                handler.drop(raw)  # its execution was stopped: the event ends here
                if served + 1 < limit:
                    channel.done()
                continue
            result = handler.handle(raw, on_task=channel.task_started)
            if result is not None and result.error == GrainError.TIMEOUT:
                return
            if served + 1 < limit:
                channel.done()

    def _take(self, client: LocalBus, channel: Channel, *, retire_when_idle: bool) -> bytes | None:
        """Block on the queue for one event and report it to the parent (TOOK); None when
        ``retire_when_idle`` and no event came within one BRPOP timeout."""
        while True:
            item = cast(
                "tuple[bytes, bytes] | None", client.brpop([self._queue], timeout=BRPOP_TIMEOUT_S)
            )
            if item is not None:
                break
            if channel.parent_gone():
                raise ParentGone("the worker exited while this instance was idle")
            if retire_when_idle:
                return None
        raw = item[1]
        try:
            channel.took(raw)
        except ParentGone:
            # The worker died between our BRPOP and now: hand the event back to the
            # front of the queue (BRPOP takes from the right) for the next instance.
            client.rpush(self._queue, raw)
            raise
        return raw


def _signal_wake_fd() -> int:
    """The read end of a pipe the signal handlers' wake-ups are written to
    (``signal.set_wakeup_fd``): a SIGTERM ends the loop's wait at once. Python retries a
    ``select`` that a signal interrupted (PEP 475), so without it a stop would wait for the
    next thing due."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    return read_fd


def _terminated(status: int) -> bool:
    """Whether a ``waitpid`` status says the process died of SIGTERM."""
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def _log(grain: str, message: str, **fields: object) -> None:
    pairs = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"grain={grain} msg={message!r} {pairs}", file=sys.stderr, flush=True)

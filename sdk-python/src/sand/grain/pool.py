"""The parent side of the fork model: fork grain instances, watch them, explain each end.

A :class:`Pool` forks children that run :func:`sand.grain.child.child_main`
and is driven from one thread by calling :meth:`Pool.wait` in a loop — the
monitoring loop. Each turn:

- reads the frames children send (``TOOK``, ``TASK``, ``RESULT``, ``DONE``:
  :mod:`sand.grain.channel`); a ``DONE`` makes a child that serves several events
  idle again (no work taken, no deadline) and counts it in :attr:`Child.served`;
- kills the whole process group of a child past its deadline plus ``grace_s``
  (the deadline starts at the fork when the caller knows it, else at the
  child's TASK frame; between its TOOK and TASK frames a child has the
  longest deadline the pool allows, at least :data:`UNTASKED_LIMIT_S`; an idle
  child has none), or of one that
  sends a frame above its wire limit;
- reaps the children that ended, kills whatever they left in their process
  group (again at every sweep until the group is gone), and returns each as
  an :class:`Ended`: :meth:`Ended.clean` says whether
  it exited as the runner does after its work; :meth:`Ended.outcome` is the
  result it delivered or the explained failure (:func:`sand.grain.exits.explain_exit`).

A child is reaped as soon as its end of the pipe closes (it exited), with one
``waitpid(pid, WNOHANG)``: no pidfd and no SIGCHLD handler, so nothing costs a
system call per event beyond the pipe and the fork. A child whose pipe stays
open after it exited (a grandchild that left its process group holds it) is
found by a sweep every :data:`SWEEP_S`. The pool reaps only its own pids, never
``waitpid(-1)``: it does not steal the status of processes it did not fork.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable, ValuesView
from dataclasses import dataclass, field

from sand.grain.channel import HEADER, Frame, TaskStarted
from sand.grain.child import ChildSetup, Work, child_main, prepare_parent
from sand.grain.exits import ExitCode, explain_exit
from sand.grain.limits import MemoryWatch, memory_limit_cause
from sand.grain.result import GrainError, GrainResult, decode_result

Clock = Callable[[], float]

DEFAULT_GRACE_S = 1.0
DEFAULT_SETUP = ChildSetup()
# How often children whose pipe is still open are checked for having exited anyway.
SWEEP_S = 0.25
# The shortest deadline of a child between its TOOK and TASK frames (see _on_frame).
UNTASKED_LIMIT_S = 30.0
# A child that closed its pipe is exiting: retry its reap after this, doubling up to
# _SETTLE_MAX_S (a grain could close the pipe and go on running).
_SETTLE_FIRST_S = 0.001
_SETTLE_MAX_S = 0.05
_READ_BYTES = 1 << 16
_DRAIN_READS = 64


@dataclass(slots=True, eq=False)
class Child:
    """A forked instance as its parent sees it. The pool updates it; callers only read."""

    pid: int
    fd: int  # the read end of its pipe
    grain: str
    started: float  # pool clock at the fork, or at the DONE of its last piece of work
    wire_limit_bytes: int | None  # largest frame body accepted (None: no limit)
    timeout_s: float = 0.0
    kill_at: float | None = None  # deadline plus grace, once known
    taken: bytes | None = None  # the body of its TOOK frame
    taken_at: float | None = None
    token: str | None = None  # the task of its TASK frame
    result: GrainResult | None = None  # the body of its RESULT frame
    timed_out: bool = False  # killed at kill_at
    oversize: bool = False  # sent a frame above wire_limit_bytes (and was killed)
    killed: bool = False
    eof: bool = False
    served: int = 0  # pieces of work it finished with a DONE frame
    oom_kills_at_fork: int | None = None  # the sandbox's OOM-kill count then (MemoryWatch)
    memory_limit_mb: int | None = None  # set when the memory limit killed it
    buffer: bytearray = field(default_factory=bytearray)
    settle_s: float = _SETTLE_FIRST_S

    @property
    def busy(self) -> bool:
        """Whether it has work: it took some (TOOK) or has a deadline. Else it is idle."""
        return self.taken is not None or self.kill_at is not None


@dataclass(frozen=True, slots=True)
class Ended:
    """A child that was reaped, with its ``waitpid`` status and the pool clock then."""

    child: Child
    status: int
    at: float

    @property
    def clean(self) -> bool:
        """It exited by itself with ``ExitCode.OK``: its work returned."""
        child = self.child
        return self.status == ExitCode.OK and not child.timed_out and not child.oversize

    def outcome(self) -> GrainResult:
        """The result it delivered (RESULT frame), else why it ended without one.

        Timed from the fork to the reap. A clean exit without a result is a failure
        here too: call this for children expected to deliver, or that did not end clean.
        """
        child = self.child
        if child.oversize:
            result = GrainResult.failure(
                GrainError.DATA_LIMIT_EXCEEDED,
                f"grain '{child.grain}' sent more than {child.wire_limit_bytes} bytes of result",
            )
        elif child.memory_limit_mb is not None:
            result = GrainResult.failure(
                GrainError.RUNTIME, memory_limit_cause(child.grain, child.memory_limit_mb)
            )
        elif child.result is not None:
            result = child.result
        else:
            result = explain_exit(
                child.grain, self.status, timed_out=child.timed_out, timeout_s=child.timeout_s
            )
        return result.with_duration((self.at - child.started) * 1000)


class Pool:
    """Forks grain instances and supervises them.

    Not thread-safe: use it from one thread of the process that created it.
    ``clock`` is a monotonic clock in seconds; children's times are on it.
    ``max_timeout_s`` caps the deadline a child's TASK frame may ask for;
    ``idle_limit_s`` bounds how long a child stays idle after a DONE frame.
    """

    def __init__(
        self,
        *,
        grace_s: float = DEFAULT_GRACE_S,
        setup: ChildSetup = DEFAULT_SETUP,
        clock: Clock = time.monotonic,
        max_timeout_s: float | None = None,
        idle_limit_s: float | None = None,
        memory: MemoryWatch | None = None,
    ) -> None:
        self._grace_s = grace_s
        # A child that sent DONE and then neither takes work nor exits within this is
        # killed: a reused instance retires by itself when idle, and a grain that forged a
        # DONE frame to shed its deadline does not run on for ever.
        self._idle_limit_s = idle_limit_s
        # The pipe is writable by the grain's own code: a TASK frame it forges cannot
        # give it a longer deadline than this.
        self._max_timeout_s = max_timeout_s
        self._setup = setup
        self._clock = clock
        # The sandbox's memory cgroup: a child SIGKILLed while its OOM-kill count moved
        # failed at the memory limit, and says so (instead of "killed by SIGKILL").
        self._memory = memory
        self._pid = os.getpid()  # once, not per fork
        self._children: dict[int, Child] = {}
        self._lingering: set[int] = set()  # groups of reaped children that had members
        self._sweep_at = clock() + SWEEP_S
        prepare_parent(setup)

    @property
    def children(self) -> ValuesView[Child]:
        """The children not reaped yet, in fork order."""
        return self._children.values()

    def fork(
        self,
        work: Work,
        *,
        grain: str,
        timeout_s: float | None = None,
        wire_limit_bytes: int | None = None,
    ) -> Child:
        """Fork a child that runs ``work`` under :func:`child_main`, and return it.

        With ``timeout_s`` the child's deadline starts now, else at its TASK frame.
        ``grain`` names it in explanations. Raises OSError if the pipe or the fork fails.
        """
        read_fd, write_fd = os.pipe()
        # Unflushed buffers would otherwise be written twice: by the parent and the child.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        started = self._clock()
        # read before the fork: a child that is OOM-killed at once must find the count moved
        oom_kills = self._memory.oom_kills() if self._memory is not None else None
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        if pid == 0:
            try:
                os.close(read_fd)
            finally:
                child_main(work, self._setup, fd=write_fd, parent_pid=self._pid)
        os.close(write_fd)
        child = Child(
            pid=pid, fd=read_fd, grain=grain, started=started, wire_limit_bytes=wire_limit_bytes
        )
        child.oom_kills_at_fork = oom_kills
        if timeout_s is not None:
            self._start_deadline(child, timeout_s, started)
        self._children[pid] = child
        return child

    def wait(self, timeout_s: float, *, wake_fd: int | None = None) -> list[Ended]:
        """One turn of the monitoring loop; returns the children that ended in it.

        Blocks up to ``timeout_s`` for a frame or an exit, less when a kill is due
        or a sweep, or until ``wake_fd`` is readable (it is then drained: a
        ``signal.set_wakeup_fd`` pipe, so that a signal ends the wait). Ended
        children are reaped, their group killed, their pipe closed. Raises nothing
        for anything a child does.
        """
        now = self._clock()
        timeout = timeout_s
        # Only a child that took work can have left a grandchild holding its pipe open after
        # it exited; while none has (children forked ahead, waiting for an event), there is
        # nothing to sweep for and an idle pool sleeps.
        if self._lingering or any(_took_work(c) for c in self._children.values()):
            timeout = min(timeout, self._sweep_at - now)
        watched: dict[int, Child] = {}
        for child in self._children.values():
            if child.eof:
                timeout = min(timeout, child.settle_s)
                child.settle_s = min(child.settle_s * 2, _SETTLE_MAX_S)
            else:
                watched[child.fd] = child
            if child.kill_at is not None and not child.killed:
                timeout = min(timeout, child.kill_at - now)
            if (idle_until := self._idle_until(child)) is not None:
                timeout = min(timeout, idle_until - now)
        self._read(watched, max(0.0, timeout), wake_fd)
        now = self._clock()
        self._enforce_deadlines(now)
        return self._reap(now)

    def stop(self, *, within_s: float) -> list[Ended]:
        """Shut down: SIGTERM the group of every busy child (it may still finish) and
        SIGKILL idle ones, run the loop for up to ``within_s``, then :meth:`kill_all`.
        Returns the children that ended before the kill."""
        for child in self._children.values():
            _signal_unreaped(child.pid, signal.SIGTERM if child.busy else signal.SIGKILL)
        ended: list[Ended] = []
        give_up = self._clock() + within_s
        while self._children and (now := self._clock()) < give_up:
            ended += self.wait(min(0.05, give_up - now))
        self.kill_all()
        return ended

    def kill(self, child: Child) -> None:
        """SIGKILL ``child``'s process group now (the platform's decision, not a failure
        of the grain: a stopped execution); it is reaped and reported as usual."""
        if child.pid in self._children and not child.killed:
            child.killed = True
            _signal_unreaped(child.pid, signal.SIGKILL)

    def kill_all(self) -> None:
        """SIGKILL every child's group now and reap them all; their outcomes are dropped.

        Blocks only as long as the kernel takes to end killed processes.
        """
        for child in self._children.values():
            _signal_unreaped(child.pid, signal.SIGKILL)
        for child in list(self._children.values()):
            try:
                _, status = os.waitpid(child.pid, 0)
            except ChildProcessError:
                status = 0
            self._finish(child, status, self._clock())

    # -- one turn ---------------------------------------------------------------------

    def _read(self, watched: dict[int, Child], timeout_s: float, wake_fd: int | None) -> None:
        fds = [*watched, *(() if wake_fd is None else (wake_fd,))]
        if not fds:
            if timeout_s > 0:
                time.sleep(timeout_s)
            return
        readable, _, _ = select.select(fds, [], [], timeout_s)
        for fd in readable:
            if fd == wake_fd:
                drain(fd)
            else:
                self._read_once(watched[fd])

    def _read_once(self, child: Child) -> None:
        # Only called for a readable pipe (or a reaped child's): never blocks.
        try:
            chunk = os.read(child.fd, _READ_BYTES)
        except OSError:
            chunk = b""
        if not chunk:
            child.eof = True
            return
        child.buffer += chunk
        self._parse(child)

    def _parse(self, child: Child) -> None:
        buffer = child.buffer
        while len(buffer) >= HEADER.size and not child.oversize:
            kind, length = HEADER.unpack_from(buffer)
            if child.wire_limit_bytes is not None and length > child.wire_limit_bytes:
                child.oversize = True  # killed by _enforce_deadlines
                break
            end = HEADER.size + length
            if len(buffer) < end:
                return
            body = bytes(buffer[HEADER.size : end])
            del buffer[:end]
            self._on_frame(child, kind, body)
        if child.oversize:
            buffer.clear()  # keep draining the pipe, so the child's exit shows as EOF

    def _on_frame(self, child: Child, kind: bytes, body: bytes) -> None:
        if kind == Frame.TOOK:
            child.taken = body
            child.taken_at = self._clock()
            if child.kill_at is None and self._max_timeout_s is not None:
                # Until its TASK frame names the task's own deadline, a child that took an
                # event gets the longest the app allows (at least UNTASKED_LIMIT_S: work that
                # runs no task, such as joining a large Map, has no timeout of its own): an
                # instance that hangs before its grain runs cannot hold the event for ever.
                limit = max(self._max_timeout_s, UNTASKED_LIMIT_S)
                self._start_deadline(child, limit, child.taken_at)
        elif kind == Frame.TASK:
            try:
                task = TaskStarted.decode(body)
            except (ValueError, KeyError, TypeError):
                return  # not from our runner: the deadline stays unknown
            child.token = task.token
            timeout_s = task.timeout_s
            if self._max_timeout_s is not None:
                timeout_s = min(timeout_s, self._max_timeout_s)
            self._start_deadline(child, timeout_s, self._clock())
        elif kind == Frame.RESULT:
            with contextlib.suppress(ValueError, TypeError):
                # A malformed result is explained by the exit status instead.
                child.result = decode_result(body)
        elif kind == Frame.DONE and not child.killed:
            # Idle again: what it took is finished, and its deadline went with it. A
            # child killed at its deadline stays explained by that, whatever it sent.
            child.served += 1
            child.started = self._clock()
            child.taken = child.taken_at = child.token = child.result = None
            child.kill_at = None
            child.timeout_s = 0.0

    def _start_deadline(self, child: Child, timeout_s: float, now: float) -> None:
        child.timeout_s = timeout_s
        child.kill_at = now + timeout_s + self._grace_s

    def _idle_until(self, child: Child) -> float | None:
        """When an idle child that has sent DONE is killed, or None."""
        if self._idle_limit_s is None or not child.served or child.busy or child.killed:
            return None
        return child.started + self._idle_limit_s

    def _enforce_deadlines(self, now: float) -> None:
        for child in self._children.values():
            if child.killed:
                continue
            if child.oversize or (child.kill_at is not None and now >= child.kill_at):
                child.timed_out = not child.oversize
                child.killed = True
                _signal_unreaped(child.pid, signal.SIGKILL)
            elif (idle_until := self._idle_until(child)) is not None and now >= idle_until:
                child.killed = True
                _signal_unreaped(child.pid, signal.SIGKILL)

    def _reap(self, now: float) -> list[Ended]:
        sweep = now >= self._sweep_at
        if sweep:
            self._sweep_at = now + SWEEP_S
            self._lingering = {group for group in self._lingering if _kill_group(group)}
        ended = []
        for child in [c for c in self._children.values() if c.eof or sweep]:
            try:
                pid, status = os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: the status is lost
                pid, status = child.pid, 0
            if pid:
                ended.append(self._finish(child, status, now))
        return ended

    def _finish(self, child: Child, status: int, now: float) -> Ended:
        del self._children[child.pid]
        # Frames still in the pipe (rare: found by a sweep): read what is there, but not
        # forever if a grandchild that escaped the group keeps writing.
        for _ in range(_DRAIN_READS):
            if child.eof or not select.select([child.fd], [], [], 0)[0]:
                break
            self._read_once(child)
        with contextlib.suppress(OSError):
            os.close(child.fd)
        # Kill whatever the instance left behind in its process group. Its id stays
        # reserved while any member lives; the group is empty otherwise.
        if _kill_group(child.pid):
            # Members were there (a grain that forked): the sweeps kill the group again
            # until it is gone, so that nothing of it outlives the instance by more than a
            # sweep, whatever raced with this kill.
            self._lingering.add(child.pid)
        if (
            self._memory is not None
            and child.oom_kills_at_fork is not None
            and not child.killed
            and os.WIFSIGNALED(status)
            and os.WTERMSIG(status) == signal.SIGKILL
            and self._memory.oom_kills() > child.oom_kills_at_fork
        ):
            # Only the kernel sends SIGKILL here besides the pool (child.killed), and it
            # counted an OOM kill during this child's life.
            child.memory_limit_mb = self._memory.limit_mb
        return Ended(child=child, status=status, at=now)


def _signal_unreaped(pid: int, signum: int) -> None:
    """Signal the process group of a child not reaped yet (so its pid is still its own)."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        # Not yet the leader of its own group (it has just been forked): it has
        # no grandchildren yet either.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    except PermissionError:
        pass


def _kill_group(group: int) -> bool:
    """SIGKILL process group ``group``; whether it had members (zombies not yet reaped by
    the sandbox's init count: they still hold their pids)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _took_work(child: Child) -> bool:
    return (
        child.taken_at is not None
        or child.served > 0
        or child.kill_at is not None
        or child.token is not None
    )


def drain(fd: int) -> None:
    """Read a non-blocking pipe empty (a ``signal.set_wakeup_fd`` pipe after it woke a
    ``select``)."""
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while os.read(fd, 512):
            pass

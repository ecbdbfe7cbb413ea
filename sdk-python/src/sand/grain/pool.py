r"""The parent side of the fork model: fork grain instances, watch them, explain each end.

A :class:`Pool` forks children that run :func:`sand.grain.child.child_main`
and is driven from one thread by calling :meth:`Pool.wait` in a loop — the
monitoring loop. Each turn:

- reads the frames children send (``WROTE``, ``RESULT``: :mod:`sand.grain.channel`).
  A child forked to serve tasks (``fork(..., tasks=True)``) is idle until the caller
  assigns it one (:meth:`Pool.assign`); its ``RESULT`` ends that task (the child is idle
  again, counted in :attr:`Child.served`, and listed in :attr:`Turn.delivered`);
- kills the whole process group of a child past its deadline plus ``grace_s``
  (the deadline starts at the fork when the caller knows it, else at the
  assignment of its task; an idle child has none), or of one that sends a frame
  above its wire limit;
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

The records of children (:class:`Child`, :class:`Ended`, :class:`Turn`) are in
:mod:`sand.grain.children`, the task pipe's writing in :mod:`sand.grain.pipes`; both
are importable from here too.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence, ValuesView

from sand.grain.channel import HEADER, Frame, frame
from sand.grain.child import ChildSetup, Work, child_main, prepare_parent
from sand.grain.children import Child, Ended, Turn
from sand.grain.limits import MemoryWatch
from sand.grain.pipes import TASK_PIPE_BYTES, drain, prepare_task_pipe, write_all
from sand.grain.result import decode_result
from sand.grain.zygote import Exit, Forked, Zygote

Clock = Callable[[], float]

DEFAULT_GRACE_S = 1.0
DEFAULT_SETUP = ChildSetup()
# How often children whose pipe is still open are checked for having exited anyway.
SWEEP_S = 0.25
# A child that closed its pipe is exiting: its reap is retried after Child.settle_s,
# doubling up to this (a grain could close the pipe and go on running).
_SETTLE_MAX_S = 0.05
_READ_BYTES = 1 << 16
# How long kill_all waits for the zygote to report the end of the instances it killed.
_ADOPTED_WAIT_S = 3.0
_DRAIN_READS = 64


class Pool:
    """Forks grain instances and supervises them.

    Not thread-safe: use it from one thread of the process that created it.
    ``clock`` is a monotonic clock in seconds; children's times are on it.
    ``max_timeout_s`` caps the deadline of an assigned task;
    ``idle_limit_s`` bounds how long a child stays idle after serving a task.
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
        zygote: Zygote | None = None,
    ) -> None:
        self._grace_s = grace_s
        # Forks on the pool's behalf (decision 0029): this process then never forks again.
        self._zygote = zygote
        self._statuses: dict[int, Exit] = {}  # ends the zygote reported
        self._requested: list[tuple[str, int | None]] = []  # request_fork's, in order
        self._forked: list[Child] = []
        self._fork_failures: list[str] = []
        # A child that served a task and then is given no other within this is killed: a
        # reused instance does not hold its memory for ever.
        self._idle_limit_s = idle_limit_s
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
        self._delivered: list[Child] = []
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
        tasks: bool = False,
    ) -> Child:
        """Fork a child that runs ``work`` under :func:`child_main`, and return it.

        With ``timeout_s`` the child's deadline starts now. With ``tasks`` the child gets
        a task pipe (its :class:`~sand.grain.channel.Channel` reads it) and waits, idle,
        for :meth:`assign`, whose task sets its deadline. ``grain`` names it in
        explanations. Raises OSError if a pipe or the fork fails. With a zygote, the
        zygote forks (``tasks`` required, ``work`` the zygote's own).
        """
        if self._zygote is not None:
            return self._fork_by_zygote(work, grain, tasks)
        read_fd, write_fd = os.pipe()
        task_read = task_write = None
        if tasks:
            try:
                task_read, task_write = os.pipe()
            except OSError:
                os.close(read_fd)
                os.close(write_fd)
                raise
            prepare_task_pipe(task_write)
        own = [read_fd, write_fd, *((task_read, task_write) if tasks else ())]
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
            for fd in own:
                os.close(fd)
            raise
        if pid == 0:
            try:
                # Neither the parent's ends nor its other children's pipes: an instance
                # can neither read another's frames nor hand another a task.
                for fd in self._parent_fds(read_fd, task_write):
                    with contextlib.suppress(OSError):
                        os.close(fd)
            finally:
                child_main(work, self._setup, fd=write_fd, parent_pid=self._pid, tasks_fd=task_read)
        os.close(write_fd)
        if task_read is not None:
            os.close(task_read)
        child = Child(
            pid=pid,
            fd=read_fd,
            tasks_fd=task_write,
            grain=grain,
            started=started,
            wire_limit_bytes=wire_limit_bytes,
        )
        child.oom_kills_at_fork = oom_kills
        if timeout_s is not None:
            self._start_deadline(child, timeout_s, started)
        self._children[pid] = child
        return child

    def _fork_by_zygote(self, work: Work, grain: str, tasks: bool) -> Child:
        assert self._zygote is not None
        if not tasks or work != self._zygote.work:
            raise ValueError("a zygote forks only task-serving instances of its own work")
        oom_kills = self._memory.oom_kills() if self._memory is not None else None
        return self._adopt(self._zygote.fork(), grain, oom_kills)

    def request_fork(self, grain: str) -> None:
        """Have the zygote fork a task-serving instance without waiting for it: it is among
        :attr:`children` (and :attr:`Turn.forked`) after the turn that brings it; a fork
        that failed is in :attr:`Turn.fork_failures`."""
        if self._zygote is None:
            raise ValueError("only a pool with a zygote forks without waiting")
        self._zygote.request()
        self._requested.append(
            (grain, self._memory.oom_kills() if self._memory is not None else None)
        )

    @property
    def forking(self) -> int:
        """Forks requested (:meth:`request_fork`) and not arrived yet."""
        return len(self._requested)

    def _adopt(self, forked: Forked, grain: str, oom_kills: int | None) -> Child:
        child = Child(
            pid=forked.pid, fd=forked.fd, tasks_fd=forked.tasks_fd, grain=grain,
            started=self._clock(), wire_limit_bytes=None, adopted=True,
        )  # fmt: skip
        child.oom_kills_at_fork = oom_kills
        self._children[child.pid] = child
        return child

    def assign(
        self, child: Child, task: bytes, *, taken: bytes, token: str, timeout_s: float
    ) -> bool:
        """Hand idle ``child`` (forked with ``tasks``) ``task``, the body of a TASK frame,
        which came from work ``taken`` (reported with the child if it dies) and runs task
        ``token`` within ``timeout_s`` (capped at ``max_timeout_s``): its deadline starts
        now. False if the child cannot take it (it is gone, or not reading): it is killed,
        and nothing is assigned."""
        if child.tasks_fd is None or child.busy or child.killed or child.eof:
            return False
        data = frame(Frame.TASK, task)
        if self.needs_fresh(task) and child.served:
            # Larger than the pipe holds: written blocking, which only a child that has not
            # run tenant code yet (it is reading in our code) is trusted to take.
            return False
        try:
            write_all(child.tasks_fd, data)
        except OSError:
            self.kill(child)
            return False
        now = self._clock()
        child.taken, child.taken_at, child.token = taken, now, token
        child.result = child.wrote = None
        if self._max_timeout_s is not None:
            timeout_s = min(timeout_s, self._max_timeout_s)
        self._start_deadline(child, timeout_s, now)
        return True

    @staticmethod
    def needs_fresh(task: bytes) -> bool:
        """Whether ``task`` is too large for the task pipe: only a child that has served no
        task yet can be assigned it."""
        return HEADER.size + len(task) > TASK_PIPE_BYTES

    def retire(self, child: Child) -> None:
        """Close idle ``child``'s task pipe: it exits by itself (no task is lost)."""
        if child.tasks_fd is not None and not child.busy:
            with contextlib.suppress(OSError):
                os.close(child.tasks_fd)
            child.tasks_fd = None

    def wait(self, timeout_s: float, *, wake_fd: int | None = None) -> list[Ended]:
        """One turn of the monitoring loop (:meth:`turn`); returns the children that
        ended in it."""
        return self.turn(timeout_s, wake_fd=wake_fd).ended

    def turn(
        self, timeout_s: float, *, wake_fd: int | None = None, fds: Sequence[int] = ()
    ) -> Turn:
        """One turn of the monitoring loop.

        Blocks up to ``timeout_s`` for a frame or an exit, less when a kill is due
        or a sweep, or until ``wake_fd`` is readable (it is then drained: a
        ``signal.set_wakeup_fd`` pipe, so that a signal ends the wait) or one of the
        caller's ``fds`` is (it is left alone: :attr:`Turn.ready`). Ended children are
        reaped, their group killed, their pipes closed. Raises nothing for anything a
        child does.
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
        ready = self._read(watched, max(0.0, timeout), wake_fd, fds)
        now = self._clock()
        self._enforce_deadlines(now)
        ended = self._reap(now)
        delivered, self._delivered = self._delivered, []
        forked, self._forked = self._forked, []
        failures, self._fork_failures = self._fork_failures, []
        return Turn(
            ended=ended, delivered=delivered, ready=ready, forked=forked, fork_failures=failures
        )

    def terminate(self) -> None:
        """SIGTERM the group of every busy child (it may still finish) and SIGKILL idle ones:
        the start of a shutdown, which the caller's loop then waits for."""
        for child in self._children.values():
            _signal_unreaped(child.pid, signal.SIGTERM if child.busy else signal.SIGKILL)

    def stop(self, *, within_s: float) -> list[Ended]:
        """Shut down: :meth:`terminate`, run the loop for up to ``within_s``, then
        :meth:`kill_all`. Returns the children that ended before the kill."""
        self.terminate()
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

    def kill_all(self) -> list[Ended]:
        """SIGKILL every child's group now and reap them all; returns them (a caller that
        does not need their outcomes drops them).

        Blocks only as long as the kernel takes to end killed processes.
        """
        for child in self._children.values():
            child.killed = True
            _signal_unreaped(child.pid, signal.SIGKILL)
        ended = []
        give_up = time.monotonic() + _ADOPTED_WAIT_S
        for child in list(self._children.values()):
            if child.adopted and self._zygote is not None:
                while child.pid not in self._statuses and time.monotonic() < give_up:
                    if select.select([self._zygote.fileno()], [], [], 0.05)[0]:
                        self._learn_exits()
                end = self._statuses.pop(child.pid, None)
                status = 0 if end is None else _used(child, end)
            else:
                try:
                    _, status = os.waitpid(child.pid, 0)
                except ChildProcessError:
                    status = 0
            ended.append(self._finish(child, status, self._clock()))
        return ended

    # -- one turn ---------------------------------------------------------------------

    def _read(
        self,
        watched: dict[int, Child],
        timeout_s: float,
        wake_fd: int | None,
        extra: Sequence[int],
    ) -> list[int]:
        zygote = () if self._zygote is None else (self._zygote.fileno(),)
        fds = [*watched, *(() if wake_fd is None else (wake_fd,)), *zygote, *extra]
        if not fds:
            if timeout_s > 0:
                time.sleep(timeout_s)
            return []
        readable, _, _ = select.select(fds, [], [], timeout_s)
        ready = []
        for fd in readable:
            if fd == wake_fd:
                drain(fd)
            elif fd in watched:
                self._read_once(watched[fd])
            elif fd in zygote:
                self._learn_exits()
            else:
                ready.append(fd)
        return ready

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
        if kind == Frame.WROTE:
            child.wrote = body.decode("utf-8", errors="replace")
        elif kind == Frame.RESULT:
            try:
                result = decode_result(body)
            except (ValueError, TypeError):
                return  # explained by the exit status instead
            if child.tasks_fd is None and child.token is None:
                child.result = result  # forked for one piece of work (the emulator)
            elif child.taken is not None and not child.killed:
                # The task is done and the child idle again, its deadline gone with it. A
                # result nobody asked for (the pipe is writable by the grain) is dropped,
                # and so is anything from a child already killed at its deadline.
                child.result = result
                child.served += 1
                child.started = self._clock()
                child.taken = child.taken_at = None
                child.kill_at = None
                child.timeout_s = 0.0
                self._delivered.append(child)

    def _parent_fds(self, *own: int | None) -> list[int]:
        fds = [fd for fd in own if fd is not None]
        for other in self._children.values():
            fds.append(other.fd)
            if other.tasks_fd is not None:
                fds.append(other.tasks_fd)
        return fds

    def _start_deadline(self, child: Child, timeout_s: float, now: float) -> None:
        child.timeout_s = timeout_s
        child.kill_at = now + timeout_s + self._grace_s

    def _idle_until(self, child: Child) -> float | None:
        """When an idle child that has served a task is killed, or None."""
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
        for child in [
            c for c in self._children.values() if c.eof or sweep or c.pid in self._statuses
        ]:
            if child.adopted:
                end = self._statuses.pop(child.pid, None)
                if end is not None:
                    ended.append(self._finish(child, _used(child, end), now))
                continue
            try:
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: the status is lost
                pid, status, usage = child.pid, 0, None
            if pid:
                if usage is not None:
                    child.cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
                    child.minflt = usage.ru_minflt
                ended.append(self._finish(child, status, now))
        return ended

    def _learn_exits(self) -> None:
        """What the zygote reported: instances forked for us, failed forks, ends (raises
        ZygoteGone if it is gone)."""
        zygote = self._zygote
        assert zygote is not None
        zygote.poll()
        for forked in zygote.take_forked():
            grain, oom_kills = self._requested.pop(0) if self._requested else ("?", None)
            self._forked.append(self._adopt(forked, grain, oom_kills))
        for failure in zygote.take_failures():
            if self._requested:
                self._requested.pop(0)
            self._fork_failures.append(failure)
        for end in zygote.take_exits():
            if end.pid in self._children:
                self._statuses[end.pid] = end

    def _finish(self, child: Child, status: int, now: float) -> Ended:
        del self._children[child.pid]
        # Frames still in the pipe (rare: found by a sweep): read what is there, but not
        # forever if a grandchild that escaped the group keeps writing.
        for _ in range(_DRAIN_READS):
            if child.eof or not select.select([child.fd], [], [], 0)[0]:
                break
            self._read_once(child)
        for fd in (child.fd, child.tasks_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        child.tasks_fd = None
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


def _used(child: Child, end: Exit) -> int:
    """Note what ``child`` used (the zygote's report); returns its status."""
    child.cpu_ms, child.minflt = end.cpu_ms, end.minflt
    return end.status


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

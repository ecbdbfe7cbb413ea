"""A fork server: a helper process that forks task-serving instances for its parent.

A process that forks pays for it after every fork, not only at the fork: each page it
writes afterwards is copy-on-write-protected again and faults (and is copied while the
child lives). A grain worker that steps workflows between forks paid ~1.6 ms of such
faults per event (decision 0029). So the worker forks once, at start, a :class:`Zygote`
that does nothing but fork instances on request; the worker itself never forks again,
and its own work stays warm.

The zygote is forked with everything the worker built before it (the grain, its
stores, the instance's code); it serves one request kind over a ``SOCK_SEQPACKET``
pair:

- ``F`` — fork an instance (the parent need not wait: :meth:`Zygote.request`, and
  the answer comes with the other messages): the zygote makes its two pipes, forks a child that runs
  ``work`` under :func:`sand.grain.child.child_main` (``tasks_fd`` set), and answers
  ``P`` + the pid with the parent's ends (the result pipe's read end, the task pipe's
  write end) attached (``SCM_RIGHTS``). It keeps no end itself. A fork that fails is
  answered ``E`` + the error;
- it reports each instance's end, unasked, as ``X`` + pid + ``wait4`` status, CPU
  time and minor faults (it is their parent: only it can reap them; a ``pidfd`` per
  instance wakes it).

The zygote dies with its parent (``PR_SET_PDEATHSIG``; its socket's end is also its
exit), and its instances die with it. :class:`sand.grain.pool.Pool` uses it through
``Pool(zygote=...)``: ``fork`` asks it, and the pool learns exit statuses from it.
"""

from __future__ import annotations

import _signal
import array
import contextlib
import os
import select
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sand.grain.channel import Channel
from sand.grain.child import ChildSetup, child_main, die_with_parent

Work = Callable[[Channel], None]

_PID = struct.Struct("!i")
_FD = array.array("i")
_EXIT = struct.Struct("!iidq")  # pid, status, CPU seconds, minor faults
_MESSAGE_BYTES = 256
_SIGNALS_TO_IGNORE = (int(_signal.SIGTERM), int(_signal.SIGINT), int(_signal.SIGHUP))


@dataclass(frozen=True, slots=True)
class Exit:
    """An instance's end, as the zygote reaped it."""

    pid: int
    status: int  # as os.waitpid gives it
    cpu_ms: float  # user + system, its whole life
    minflt: int  # minor page faults, its whole life


@dataclass(frozen=True, slots=True)
class Forked:
    """An instance the zygote forked: the parent's ends of its pipes are now ours."""

    pid: int
    fd: int  # the read end of its result pipe
    tasks_fd: int  # the write end of its task pipe


class ZygoteGone(OSError):
    """The zygote exited (it was killed): no instance can be forked any more."""


class Zygote:
    """The parent's handle on its fork server. Use from one thread."""

    def __init__(self, pid: int, sock: socket.socket, work: Work) -> None:
        self.pid = pid
        self.work = work  # what its instances run
        self._sock = sock
        self._exits: list[Exit] = []
        self._forked: list[Forked] = []
        self._failures: list[str] = []

    @classmethod
    def start(
        cls, work: Work, setup: ChildSetup, *, prepare_tasks: Callable[[int], None]
    ) -> Zygote:
        """Fork the zygote. Its instances run ``work`` with ``setup``; ``prepare_tasks``
        is called on the write end of each new task pipe (in the zygote) before it is
        handed over."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs, work, setup, parent, prepare_tasks)
        theirs.close()
        return cls(pid, ours, work)

    def fileno(self) -> int:
        """Readable when the zygote reported an instance's end (or exited)."""
        return self._sock.fileno()

    def request(self) -> None:
        """Ask for an instance without waiting: it arrives with :meth:`poll` (the socket is
        readable then) in :meth:`take_forked`, or its failure in :meth:`take_failures`.
        Raises :class:`ZygoteGone` if the zygote is gone."""
        try:
            self._sock.send(b"F")
        except OSError as exc:
            raise ZygoteGone(f"the zygote {self.pid} is gone: {exc}") from exc

    def fork(self) -> Forked:
        """Ask for an instance and wait for one. Raises OSError if the fork failed (the
        pids limit), :class:`ZygoteGone` if the zygote is gone."""
        self.request()
        while not self._forked:
            if self._failures:
                raise OSError(self._failures.pop(0))
            self._receive(block=True)
        return self._forked.pop(0)

    def poll(self) -> None:
        """Read every message waiting on the socket, without blocking."""
        while self._receive(block=False):
            pass

    def take_forked(self) -> list[Forked]:
        forked, self._forked = self._forked, []
        return forked

    def take_failures(self) -> list[str]:
        failures, self._failures = self._failures, []
        return failures

    def take_exits(self) -> list[Exit]:
        exits, self._exits = self._exits, []
        return exits

    def close(self) -> None:
        """Close the socket: the zygote exits, and its instances with it."""
        self._sock.close()

    def _receive(self, *, block: bool) -> bool:
        """Read one message into the lists it belongs to; False when not blocking and
        nothing waits."""
        try:
            # socket.recv_fds would do, but ignores its flags up to Python 3.12
            message, ancillary, _, _ = self._sock.recvmsg(
                _MESSAGE_BYTES,
                socket.CMSG_LEN(2 * _FD.itemsize),
                0 if block else socket.MSG_DONTWAIT,
            )
        except BlockingIOError:
            return False
        except OSError as exc:
            raise ZygoteGone(f"the zygote {self.pid} is gone: {exc}") from exc
        fds = array.array("i")
        for level, cmsg_type, data in ancillary:
            if level == socket.SOL_SOCKET and cmsg_type == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        kind = message[:1]
        if kind == b"P" and len(fds) == 2:
            (pid,) = _PID.unpack_from(message, 1)
            self._forked.append(Forked(pid, fds[0], fds[1]))
            return True
        for fd in fds:  # not ours to keep
            os.close(fd)
        if not message:
            raise ZygoteGone(f"the zygote {self.pid} exited")
        if kind == b"X":
            pid, status, cpu_s, minflt = _EXIT.unpack_from(message, 1)
            self._exits.append(Exit(pid, status, cpu_s * 1000, minflt))
        elif kind == b"E":
            self._failures.append(message[1:].decode(errors="replace"))
        return True


def _serve(
    sock: socket.socket,
    work: Work,
    setup: ChildSetup,
    parent: int,
    prepare_tasks: Callable[[int], None],
) -> NoReturn:
    """The zygote's life: fork on request, reap and report, until the parent is gone."""
    try:
        # A stop's SIGTERM (or a terminal's SIGINT) to the whole group is the worker's to
        # act on; the zygote leaves with it (its socket's end, or PR_SET_PDEATHSIG).
        for signum in _SIGNALS_TO_IGNORE:
            _signal.signal(signum, int(_signal.SIG_IGN))
        _signal.signal(int(_signal.SIGCHLD), int(_signal.SIG_DFL))
        with contextlib.suppress(ValueError):
            _signal.set_wakeup_fd(-1)
        die_with_parent()
        if os.getppid() != parent:
            os._exit(0)
        instances: dict[int, int] = {}  # pidfd -> pid
        while True:
            readable, _, _ = select.select([sock, *instances], [], [])
            for fd in readable:
                if fd in instances:
                    pid = instances.pop(fd)
                    os.close(fd)
                    _, status, usage = os.wait4(pid, 0)
                    cpu_s = usage.ru_utime + usage.ru_stime
                    sock.send(b"X" + _EXIT.pack(pid, status, cpu_s, usage.ru_minflt))
            if sock in readable:
                request = sock.recv(16)
                if not request:
                    os._exit(0)
                _fork_instance(sock, work, setup, instances, prepare_tasks)
    except BaseException:  # the parent sees the socket close and stops forking
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
    os._exit(1)


def _fork_instance(
    sock: socket.socket,
    work: Work,
    setup: ChildSetup,
    instances: dict[int, int],
    prepare_tasks: Callable[[int], None],
) -> None:
    fds: list[int] = []
    try:
        result_read, result_write = os.pipe()
        fds += (result_read, result_write)
        task_read, task_write = os.pipe()
        fds += (task_read, task_write)
        prepare_tasks(task_write)
        zygote = os.getpid()
        pid = os.fork()
    except OSError as exc:
        for fd in fds:
            os.close(fd)
        sock.send(b"E" + str(exc).encode()[:200])
        return
    if pid == 0:
        # nothing of the zygote's: not its socket, not the other instances' pidfds
        for fd in (sock.fileno(), *instances, result_read, task_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        child_main(work, setup, fd=result_write, parent_pid=zygote, tasks_fd=task_read)
    os.close(result_write)
    os.close(task_read)
    instances[os.pidfd_open(pid)] = pid
    try:
        socket.send_fds(sock, [b"P" + _PID.pack(pid)], [result_read, task_write])
    finally:
        os.close(result_read)
        os.close(task_write)

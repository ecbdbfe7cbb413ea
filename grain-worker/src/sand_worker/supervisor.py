"""The sandbox's main process: one grain worker per grain, kept alive until it must stop.

It forks one worker per grain and restarts a worker that dies (with a back-off,
reported on stderr, which the host agent shows in ``sand logs``). It stops — SIGTERM to
every worker, SIGKILL to those still there after :data:`STOP_GRACE_S` — on SIGTERM or
SIGINT, and when the host agent that started it is gone (decision 0021): the agent hands
it a pipe whose other end only the agent holds (``SAND_AGENT_FD``), so end-of-file on it
means the agent exited, however it died. The whole stop takes under 3 s.

The loop never polls: it sleeps in one ``select`` on the agent's pipe and a self-pipe
that the signal handlers wake (``signal.set_wakeup_fd``: SIGCHLD, SIGTERM, SIGINT),
with a timeout only while a restart is due. It reaps every child, also orphans that the
kernel hands to it as the pid 1 of the sandbox's pid namespace.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import NoReturn

from sand.grain.child import die_with_parent
from sand.grain.pool import drain

RESTART_BACKOFF_S = (0.1, 0.5, 1, 2, 5)
# After SIGTERM a worker has this long to finish (its pool gives busy instances most of
# it) before it is killed; with the reaping after it, a stop stays within 3 s.
STOP_GRACE_S = 2.0
_READ_BYTES = 4096

Clock = Callable[[], float]


class WorkerExit(IntEnum):
    """How ``python -m sand_worker`` and the grain workers it forks exit."""

    OK = 0
    # A grain worker raised; its traceback is on stderr. It is restarted.
    CRASHED = 1
    # The configuration or the app is invalid: restarting would not help.
    CANNOT_START = 2


@dataclass(slots=True)
class _Pending:
    """A grain whose worker died and is restarted at ``due`` (supervisor clock)."""

    grain: str
    due: float


class WorkerSupervisor:
    """Keeps one worker per grain alive until told to stop. ``run`` blocks; one thread.

    ``serve(grain)`` is what a forked worker does; it never returns (it leaves through
    ``os._exit``). The worker starts with default signal handlers, without the agent's
    pipe, and is killed by the kernel if the supervisor dies (``PR_SET_PDEATHSIG``: the
    supervisor is single-threaded, so the thread that forked it is the process).
    ``agent_fd``, when given, is the read end of the pipe whose end-of-file means the
    host agent is gone.
    """

    def __init__(
        self,
        grains: list[str],
        serve: Callable[[str], NoReturn],
        *,
        agent_fd: int | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self._grains = grains
        self._serve = serve
        self._agent_fd = agent_fd
        self._wake: tuple[int, int] | None = None
        self._clock = clock
        self._workers: dict[int, str] = {}
        self._failures: dict[str, int] = {}
        self._pending: list[_Pending] = []
        self._stop_reason: str | None = None

    @property
    def workers(self) -> dict[int, str]:
        """The live workers: pid → grain."""
        return dict(self._workers)

    def run(self) -> int:
        """Serve until SIGTERM, SIGINT or the agent's end of file; returns the exit status."""
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w):
            os.set_blocking(fd, False)
        self._wake = (wake_r, wake_w)
        previous_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        handlers = {
            signum: signal.signal(signum, self._on_signal)
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
        }
        try:
            for grain in self._grains:
                self._start(grain)
            while self._stop_reason is None:
                self._reap()
                self._restart_due()
                self._sleep(wake_r)
            _log(f"stopping: {self._stop_reason}")
            self._stop(wake_r)
        finally:
            signal.set_wakeup_fd(previous_fd)
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            os.close(wake_r)
            os.close(wake_w)
            self._wake = None
        return WorkerExit.OK

    # -- the loop ---------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: object) -> None:
        # The wakeup fd already woke the select; SIGCHLD needs nothing more.
        if signum != signal.SIGCHLD and self._stop_reason is None:
            self._stop_reason = f"{signal.Signals(signum).name} received"

    def _sleep(self, wake_r: int) -> None:
        """Block until a signal, the agent's pipe, or the next due restart."""
        timeout = None
        if self._pending:
            timeout = max(0.0, min(p.due for p in self._pending) - self._clock())
        watched = [wake_r] if self._agent_fd is None else [wake_r, self._agent_fd]
        readable, _, _ = select.select(watched, [], [], timeout)
        if wake_r in readable:
            drain(wake_r)
        if self._agent_fd is not None and self._agent_fd in readable:
            try:
                data = os.read(self._agent_fd, _READ_BYTES)
            except OSError as exc:
                data = b""
                _log(f"cannot read the host agent's pipe: {exc}")
            if not data and self._stop_reason is None:
                self._stop_reason = "the host agent that started this sandbox is gone"

    def _reap(self) -> None:
        """Reap every child that ended; schedule the restart of a worker that died."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            grain = self._workers.pop(pid, None)
            if grain is None:
                continue  # an orphan the kernel gave to pid 1
            self._failures[grain] = self._failures.get(grain, 0) + 1
            delay = RESTART_BACKOFF_S[min(self._failures[grain], len(RESTART_BACKOFF_S)) - 1]
            _log(f"worker of grain '{grain}' (pid {pid}) {_ended(status)}; restarting in {delay} s")
            self._pending.append(_Pending(grain, self._clock() + delay))

    def _restart_due(self) -> None:
        now = self._clock()
        due = [p for p in self._pending if p.due <= now]
        for pending in due:
            self._pending.remove(pending)
            self._start(pending.grain)

    def _start(self, grain: str) -> None:
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:  # the sandbox's pids limit is reached: try again later
            _log(f"cannot start the worker of grain '{grain}': {exc}")
            self._pending.append(_Pending(grain, self._clock() + RESTART_BACKOFF_S[-1]))
            return
        if pid == 0:
            self._become_worker(parent)
            self._serve(grain)
        self._workers[pid] = grain

    def _become_worker(self, parent: int) -> None:
        """In a freshly forked worker: none of the supervisor's signal plumbing, no
        agent pipe, and death with the supervisor."""
        try:
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                signal.signal(signum, signal.SIG_DFL)
            for fd in self._wake or ():
                os.close(fd)
            if self._agent_fd is not None:
                # fd 0 stays open, on /dev/null: code that reads stdin gets end of file
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, self._agent_fd)
                os.close(devnull)
            die_with_parent()
        except BaseException as exc:  # nothing may escape a forked child
            with contextlib.suppress(BaseException):
                _log(f"a worker could not start: {exc}")
            os._exit(WorkerExit.CRASHED)
        # the supervisor may have died before the prctl took effect
        if os.getppid() != parent:
            os._exit(WorkerExit.OK)

    # -- stopping ---------------------------------------------------------------------

    def _stop(self, wake_r: int) -> None:
        """SIGTERM every worker, give them :data:`STOP_GRACE_S`, SIGKILL the rest, reap."""
        self._pending.clear()
        for pid in self._workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        give_up = self._clock() + STOP_GRACE_S
        while self._workers and (left := give_up - self._clock()) > 0:
            self._reap_stopping()
            if self._workers:
                readable, _, _ = select.select([wake_r], [], [], left)
                if readable:
                    drain(wake_r)
        for pid, grain in self._workers.items():
            _log(
                f"worker of grain '{grain}' (pid {pid}) still there after {STOP_GRACE_S} s: killed"
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in list(self._workers):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self._workers.pop(pid, None)

    def _reap_stopping(self) -> None:
        while self._workers:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self._workers.clear()
                return
            if pid == 0:
                return
            self._workers.pop(pid, None)


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    try:
        if code < 0:
            return f"was killed by {signal.Signals(-code).name}"
        return f"exited with status {code} ({WorkerExit(code).name})"
    except ValueError:
        return f"ended with wait status {status}"


def _log(message: str) -> None:
    print(f"sand-worker: {message}", file=sys.stderr, flush=True)

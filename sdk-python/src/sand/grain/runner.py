"""Run one grain invocation in a freshly forked process, the rq way.

The grain module is imported once in the parent (:func:`load_handler`); each
invocation is a fork of that warm parent, so an instance starts with the grain's
code and libraries loaded and releases everything it allocated when it exits.

Child side (reusable by any forking worker):

- :func:`prepare_child_process` — own process group, default signals, no stdin;
- :func:`invoke` — call ``handle`` under a deadline and turn whatever happens into
  a :class:`GrainResult` (exception, timeout, ``sys.exit``, non-JSON or oversized
  output);
- :func:`encode_result` — the result as JSON bytes, ready for a pipe or a queue;
- :func:`child_main` — all three around a ``receive``/``deliver`` pair, then
  ``os._exit``; :func:`run_child` is it with a known invocation and a pipe.

A pre-forking grain worker forks children ahead of events: each child runs
``child_main`` with ``receive`` blocking on the grain's queue (and telling the
parent when its deadline starts) and ``deliver`` publishing to the next queues.

Parent side:

- :func:`spawn` forks a child running :func:`run_child` and returns a
  :class:`GrainProcess`, which the caller drives from its own monitoring loop
  (``wait_fds``/``poll``), or blocks on with :meth:`GrainProcess.wait`;
- the parent kills the child's whole process group after the deadline plus a
  grace period, and :func:`result_from_exit` explains every other way a child can
  end (exit status, signal) as a failed :class:`GrainResult`.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from sand.data import DataStore, Scope
from sand.grain.context import Context, Data, NextGrainError

Handler = Callable[[Any, Context], Any]
Clock = Callable[[], float]

DEFAULT_GRACE_S = 1.0
# Exit status of a child whose runner itself failed (sysexits.h EX_SOFTWARE).
EXIT_RUNNER_FAILED = 70
# Room on the pipe beyond the payload limit for the error, cause and traceback.
_WIRE_SLACK_BYTES = 1 << 20
_CHILD_DEFAULT_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGCHLD,
)


class GrainError(StrEnum):
    """The ASL error names a runner produces itself (exceptions keep their class name)."""

    TIMEOUT = "States.Timeout"
    TASK_FAILED = "States.TaskFailed"
    RUNTIME = "States.Runtime"
    DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"


@dataclass(frozen=True, slots=True)
class Invocation:
    """Everything a child needs to run one event through one grain."""

    app_name: str
    grain_name: str
    execution_id: str
    input: Any
    timeout_s: float
    payload_limit_bytes: int = 256 * 1024
    # Grains this grain may choose at run time (context.add_next).
    potential_next: frozenset[str] = frozenset()
    # The ASL context object ($$) of the task.
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GrainResult:
    """How one invocation ended: ``output`` when ok, else ``error`` and ``cause``.

    ``next_grains`` is None unless the grain chose next grains with
    ``context.add_next``. ``traceback`` is for logs, never for the workflow.
    """

    output: Any = None
    next_grains: tuple[str, ...] | None = None
    error: str | None = None
    cause: str | None = None
    traceback: str | None = None
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(
        cls, error: str, cause: str, *, traceback: str | None = None, duration_ms: float = 0.0
    ) -> GrainResult:
        return cls(error=str(error), cause=cause, traceback=traceback, duration_ms=duration_ms)


class GrainLoadError(Exception):
    """A grain file could not be imported or does not define a callable ``handle``."""


class GrainTimeout(BaseException):
    """Raised inside the grain when its deadline passes.

    A BaseException so that a grain's ``except Exception`` does not swallow it.
    """


# -- loading (parent) ------------------------------------------------------------------


def load_handler(path: Path, module_name: str) -> Handler:
    """Import the grain file at ``path`` as ``module_name`` and return its ``handle``.

    Runs the module's top-level code (in the calling process). Every failure,
    including ``SystemExit``, becomes a :class:`GrainLoadError` naming the file.
    """
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise GrainLoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(module_name, None)
        raise GrainLoadError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    handler = getattr(module, "handle", None)
    if not callable(handler):
        raise GrainLoadError(f"{path}: handle must be a callable handle(event, context)")
    result: Handler = handler
    return result


# -- child side --------------------------------------------------------------------------


def prepare_child_process(*, stdout_to_stderr: bool = False) -> None:
    """Make the current (freshly forked) process a grain instance.

    Own process group (the parent kills it as a whole, grandchildren included),
    default signal dispositions (the parent's handlers are meaningless here), and
    no stdin. ``stdout_to_stderr`` keeps a grain's prints off a stdout that carries
    results (the emulator's). SIGPIPE stays ignored, as in any Python process, so
    a closed pipe is an exception rather than a silent death.
    """
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    for signum in _CHILD_DEFAULT_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if stdout_to_stderr:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(2, 1)  # C extensions and subprocesses write to fd 1
        sys.stdout = sys.stderr  # print() writes to the sys.stdout object, whatever its fd


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise GrainTimeout in this thread after ``seconds`` (main thread only; else no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise GrainTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def invoke(
    handler: Handler,
    invocation: Invocation,
    stores: Mapping[Scope, DataStore],
    *,
    clock: Clock = time.monotonic,
) -> GrainResult:
    """Call ``handler(invocation.input, context)`` here and now, and explain the outcome.

    Never raises for anything the grain does: an exception becomes ``error`` = its
    class name and ``cause`` = its message; the deadline (``invocation.timeout_s``,
    enforced with SIGALRM in the main thread) becomes ``States.Timeout``; choosing a
    next grain outside ``potentialNext`` (uncaught) becomes ``States.Runtime``;
    ``sys.exit`` becomes ``States.TaskFailed``; an output that is not JSON becomes
    ``States.Runtime``; one above the payload limit ``States.DataLimitExceeded``.
    The returned ``output`` is the output as the next grain will see it (JSON
    round-tripped).
    """
    grain = invocation.grain_name
    started = clock()
    context = Context(
        execution_id=invocation.execution_id,
        grain_name=grain,
        app_name=invocation.app_name,
        deadline=started + invocation.timeout_s,
        data=Data(stores),
        potential_next=invocation.potential_next,
        state=invocation.state,
        clock=clock,
    )

    def elapsed_ms() -> float:
        return (clock() - started) * 1000

    try:
        with _deadline(invocation.timeout_s):
            output = handler(invocation.input, context)
    except GrainTimeout:
        return GrainResult.failure(
            GrainError.TIMEOUT,
            f"grain '{grain}' did not finish within its timeout of {invocation.timeout_s:g} s",
            traceback=traceback.format_exc(),
            duration_ms=elapsed_ms(),
        )
    except NextGrainError as exc:
        return GrainResult.failure(
            GrainError.RUNTIME,
            str(exc),
            traceback=traceback.format_exc(),
            duration_ms=elapsed_ms(),
        )
    except SystemExit as exc:
        return GrainResult.failure(
            GrainError.TASK_FAILED,
            f"grain '{grain}' called sys.exit({exc.code!r})",
            traceback=traceback.format_exc(),
            duration_ms=elapsed_ms(),
        )
    except BaseException as exc:  # any failure of user code is a result
        return GrainResult.failure(
            type(exc).__name__,
            str(exc),
            traceback=traceback.format_exc(),
            duration_ms=elapsed_ms(),
        )
    try:
        text = json.dumps(output, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return GrainResult.failure(
            GrainError.RUNTIME,
            f"output of grain '{grain}' is not JSON-serialisable: {exc}",
            duration_ms=elapsed_ms(),
        )
    size = len(text.encode("utf-8"))
    if size > invocation.payload_limit_bytes:
        return GrainResult.failure(
            GrainError.DATA_LIMIT_EXCEEDED,
            f"output of grain '{grain}' is {size} bytes, above the payload limit of "
            f"{invocation.payload_limit_bytes} bytes",
            duration_ms=elapsed_ms(),
        )
    return GrainResult(
        output=json.loads(text), next_grains=context.next_grains, duration_ms=elapsed_ms()
    )


def encode_result(result: GrainResult) -> bytes:
    """The result as UTF-8 JSON (the wire format between a child and its parent)."""
    doc: dict[str, Any] = {"duration_ms": result.duration_ms}
    if result.ok:
        doc["output"] = result.output
        doc["next_grains"] = None if result.next_grains is None else list(result.next_grains)
    else:
        doc.update(error=result.error, cause=result.cause, traceback=result.traceback)
    return json.dumps(doc).encode("utf-8")


def decode_result(payload: bytes) -> GrainResult:
    """The inverse of :func:`encode_result`; raises ValueError on a malformed payload."""
    doc = json.loads(payload)
    if not isinstance(doc, dict):
        raise ValueError("grain result must be a JSON object")
    duration_ms = float(doc.get("duration_ms", 0.0))
    if doc.get("error") is not None:
        return GrainResult.failure(
            str(doc["error"]),
            str(doc.get("cause") or ""),
            traceback=doc.get("traceback"),
            duration_ms=duration_ms,
        )
    next_grains = doc.get("next_grains")
    return GrainResult(
        output=doc.get("output"),
        next_grains=None if next_grains is None else tuple(next_grains),
        duration_ms=duration_ms,
    )


def child_main(
    handler: Handler,
    stores: Mapping[Scope, DataStore],
    *,
    receive: Callable[[], Invocation],
    deliver: Callable[[Invocation, GrainResult], None],
    stdout_to_stderr: bool = False,
) -> NoReturn:
    """The whole life of a forked grain instance; call it right after ``os.fork()``.

    Prepares the process, takes one event with ``receive`` (which may block: a
    pre-forked child waits on its queue here, and may tell its parent the deadline
    has started), runs it with :func:`invoke`, hands the result to ``deliver`` (a
    pipe to the parent, the next grains' queues...) and exits. Leaves only through
    ``os._exit``: 0 once ``deliver`` returned, ``EXIT_RUNNER_FAILED`` if the runner
    itself broke (its traceback goes to stderr). Never returns into the parent's
    code, so no atexit handler or finally block of the parent runs twice.
    """
    code = EXIT_RUNNER_FAILED
    try:
        prepare_child_process(stdout_to_stderr=stdout_to_stderr)
        invocation = receive()
        deliver(invocation, invoke(handler, invocation, stores))
        code = 0
    except BaseException:  # nothing may escape a forked child
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        exit_child(code)


def exit_child(code: int) -> NoReturn:
    """Leave a forked child: flush what it printed, then ``os._exit`` (never the parent's
    atexit handlers or finally blocks)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)


def run_child(
    handler: Handler,
    invocation: Invocation,
    stores: Mapping[Scope, DataStore],
    result_fd: int,
    *,
    stdout_to_stderr: bool = False,
) -> NoReturn:
    """:func:`child_main` for an invocation known at fork time, result written to a pipe."""
    child_main(
        handler,
        stores,
        receive=lambda: invocation,
        deliver=lambda _, result: _write_all(result_fd, encode_result(result)),
        stdout_to_stderr=stdout_to_stderr,
    )


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.close(fd)


# -- parent side -------------------------------------------------------------------------


def result_from_exit(
    grain: str, status: int, *, timed_out: bool = False, timeout_s: float = 0.0
) -> GrainResult:
    """Explain a child that ended without delivering a result (``status`` as from waitpid)."""
    if timed_out:
        return GrainResult.failure(
            GrainError.TIMEOUT,
            f"grain '{grain}' did not finish within its timeout of {timeout_s:g} s "
            "and its process group was killed",
        )
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return GrainResult.failure(
            GrainError.TASK_FAILED,
            f"grain '{grain}' process was killed by signal {name} ({signum})",
        )
    code = os.WEXITSTATUS(status)
    if code == 0:
        cause = f"grain '{grain}' process exited with status 0 without returning a result"
    else:
        cause = f"grain '{grain}' process exited with status {code}"
    return GrainResult.failure(GrainError.TASK_FAILED, cause)


def spawn(
    handler: Handler,
    invocation: Invocation,
    stores: Mapping[Scope, DataStore],
    *,
    grace_s: float = DEFAULT_GRACE_S,
    stdout_to_stderr: bool = False,
    clock: Clock = time.monotonic,
) -> GrainProcess:
    """Fork a grain instance running ``invocation`` and return its handle.

    The child is killed (with its whole process group) ``grace_s`` after its
    deadline if it has not ended by itself. ``clock`` must be a monotonic clock in
    seconds shared with the caller's loop.
    """
    read_fd, write_fd = os.pipe()
    # Unflushed buffers would otherwise be written twice: by the parent and the child.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    started = clock()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # child
        try:
            os.close(read_fd)
        finally:
            run_child(handler, invocation, stores, write_fd, stdout_to_stderr=stdout_to_stderr)
    os.close(write_fd)
    # Also set from the parent: whichever side runs first, the group exists before
    # the parent may need to kill it.
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return GrainProcess(
        pid=pid,
        result_fd=read_fd,
        invocation=invocation,
        started=started,
        kill_at=started + invocation.timeout_s + grace_s,
        clock=clock,
    )


class GrainProcess:
    """A forked grain instance as its parent sees it.

    Drive it from one thread: watch :meth:`wait_fds` (readable when there is
    something to do) and call :meth:`poll` until it returns the result; or block in
    :meth:`wait`. Once a result is returned the child is reaped, its process group
    killed and its descriptors closed.
    """

    def __init__(
        self,
        *,
        pid: int,
        result_fd: int,
        invocation: Invocation,
        started: float,
        kill_at: float,
        clock: Clock,
    ) -> None:
        self.pid = pid
        self.invocation = invocation
        self.started = started
        self.kill_at = kill_at
        self._clock = clock
        self._fd: int | None = result_fd
        os.set_blocking(result_fd, False)
        self._pidfd: int | None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None  # old kernel: callers poll (see wait_fds)
        self._buffer = bytearray()
        self._eof = False
        self._oversize = False
        self._timed_out = False
        self._result: GrainResult | None = None
        self._max_wire_bytes = invocation.payload_limit_bytes + _WIRE_SLACK_BYTES

    @property
    def done(self) -> bool:
        return self._result is not None

    def wait_fds(self) -> list[int]:
        """Descriptors that become readable when :meth:`poll` may make progress.

        Empty when the platform has no pidfd and the pipe is at EOF: then poll
        periodically (every few tens of ms) until ``kill_at``.
        """
        fds = []
        if self._fd is not None and not self._eof:
            fds.append(self._fd)
        if self._pidfd is not None:
            fds.append(self._pidfd)
        return fds

    def poll(self) -> GrainResult | None:
        """The result if the child has ended (or was just killed at its deadline), else None.

        Never blocks for long: reaping a child that has exited, or one just killed
        with SIGKILL, is immediate.
        """
        if self._result is not None:
            return self._result
        self._drain()
        exited = self._has_exited()
        if not exited and (self._oversize or self._clock() >= self.kill_at):
            self._timed_out = not self._oversize
            self._kill_group()
            exited = True
        if not exited:
            return None
        # The child is a zombie (waitid WNOWAIT) so its group id is still reserved:
        # killing the group now cannot hit an unrelated process, and takes any
        # grandchild the grain left behind.
        self._kill_group()
        _, status = _waitpid_retry(self.pid)
        self._drain_to_eof(timeout_s=1.0)
        self._result = self._make_result(status)
        self._close()
        return self._result

    def wait(self) -> GrainResult:
        """Block until the child ends or is killed at its deadline; the monitoring loop."""
        while True:
            result = self.poll()
            if result is not None:
                return result
            fds = self.wait_fds()
            timeout = max(0.0, self.kill_at - self._clock())
            if not fds:
                timeout = min(timeout, 0.02)
            _select(fds, timeout)

    def kill(self) -> None:
        """Stop the instance now (its result is discarded), kill its group and reap it."""
        if self._result is not None:
            return
        self._kill_group()
        _waitpid_retry(self.pid)
        self._result = GrainResult.failure(
            GrainError.TASK_FAILED, f"grain '{self.invocation.grain_name}' was cancelled"
        )
        self._close()

    # -- internals -------------------------------------------------------------------

    def _has_exited(self) -> bool:
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def _drain(self) -> None:
        if self._fd is None or self._eof:
            return
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                self._eof = True
                return
            if not chunk:
                self._eof = True
                return
            if len(self._buffer) + len(chunk) > self._max_wire_bytes:
                self._oversize = True
                self._eof = True
                return
            self._buffer += chunk

    def _drain_to_eof(self, timeout_s: float) -> None:
        give_up_at = time.monotonic() + timeout_s
        while self._fd is not None and not self._eof:
            remaining = give_up_at - time.monotonic()
            if remaining <= 0:
                return
            _select([self._fd], remaining)
            self._drain()

    def _make_result(self, status: int) -> GrainResult:
        grain = self.invocation.grain_name
        duration_ms = (self._clock() - self.started) * 1000
        result: GrainResult | None = None
        if self._oversize:
            result = GrainResult.failure(
                GrainError.DATA_LIMIT_EXCEEDED,
                f"grain '{grain}' sent more than {self._max_wire_bytes} bytes of result",
            )
        elif self._eof and self._buffer:
            try:
                result = decode_result(bytes(self._buffer))
            except ValueError:
                result = None  # cut short by a kill: explained by the exit status below
        if result is None:
            result = result_from_exit(
                grain, status, timed_out=self._timed_out, timeout_s=self.invocation.timeout_s
            )
        return _with_duration(result, duration_ms)

    def _close(self) -> None:
        for fd in (self._fd, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = None
        self._pidfd = None


def run(
    handler: Handler,
    invocation: Invocation,
    stores: Mapping[Scope, DataStore],
    *,
    grace_s: float = DEFAULT_GRACE_S,
    stdout_to_stderr: bool = False,
) -> GrainResult:
    """Run one invocation in a forked child and block until its result. See :func:`spawn`."""
    process = spawn(handler, invocation, stores, grace_s=grace_s, stdout_to_stderr=stdout_to_stderr)
    try:
        return process.wait()
    finally:
        process.kill()  # no-op once a result was returned; else e.g. KeyboardInterrupt


def _with_duration(result: GrainResult, duration_ms: float) -> GrainResult:
    return GrainResult(
        output=result.output,
        next_grains=result.next_grains,
        error=result.error,
        cause=result.cause,
        traceback=result.traceback,
        duration_ms=duration_ms,
    )


def _waitpid_retry(pid: int) -> tuple[int, int]:
    while True:
        try:
            return os.waitpid(pid, 0)
        except ChildProcessError:
            return pid, 0
        except InterruptedError:
            continue


def _select(fds: list[int], timeout_s: float) -> None:
    with contextlib.suppress(InterruptedError):
        select.select(fds, [], [], max(0.0, timeout_s))

"""Run a grain's code: import it once, call it under a deadline, fork it for one invocation.

- :func:`load_handler` imports a grain file in the calling process (a parent,
  so that every fork of it starts warm); :func:`load_grain` does so for a grain
  worker or the emulator, where a grain that fails to import fails only the
  executions that reach it; :func:`import_problems` tries each grain's import in a
  child process of its own (``sand validate``);
- :func:`invoke` calls ``handle(event, context)`` here and now and turns
  whatever happens into a :class:`GrainResult`. A grain worker's child calls it
  for each task it runs;
- :func:`fork_invocation` runs one invocation in a child of a
  :class:`~sand.grain.pool.Pool` that sends the result back through its pipe
  (the emulator).

The fork model itself is in :mod:`sand.grain.child` (the child's entry and
exit), :mod:`sand.grain.pool` (the parent's monitoring loop) and
:mod:`sand.grain.exits` (what an exit status means).
"""

from __future__ import annotations

import _signal
import contextlib
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
from pathlib import Path
from types import FrameType
from typing import Any

from sand.data import DataStore, Scope
from sand.grain.channel import Channel
from sand.grain.context import Context, Data, NextGrainError
from sand.grain.limits import address_space_limit_mb
from sand.grain.pool import Child, Pool
from sand.grain.result import GrainError, GrainResult, Invocation

_SIGALRM = int(signal.SIGALRM)

Handler = Callable[[Any, Context], Any]
Clock = Callable[[], float]

# Room on the pipe beyond the payload limit for the error, cause and traceback.
_WIRE_SLACK_BYTES = 1 << 20


class GrainLoadError(Exception):
    """A grain file could not be imported or does not define a callable ``handle``."""


class GrainTimeout(BaseException):
    """Raised inside the grain when its deadline passes.

    A BaseException so that a grain's ``except Exception`` does not swallow it.
    """


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


def load_grain(name: str, path: Path, module_name: str) -> tuple[Handler, GrainLoadError | None]:
    """The ``handle`` of grain ``name``, and None; or, when its file fails to import, a
    handler that fails every event with ``States.Runtime`` naming the import error, and
    that error (for the caller to log once).

    A grain that cannot be imported thus fails the executions that reach it, each with
    a clear error, and nothing else: its worker stays up, the other grains run."""
    try:
        return load_handler(path, module_name), None
    except GrainLoadError as exc:
        error = GrainLoadError(f"grain '{name}' cannot run: {exc}")

        def fail(event: Any, context: Context) -> Any:
            raise error

        return fail, error


# The longest one grain's import may take in `import_problems` before it is called hung.
IMPORT_TIMEOUT_S = 10.0


def import_problems(
    grains: Mapping[str, Path], app_root: Path, *, timeout_s: float = IMPORT_TIMEOUT_S
) -> dict[str, str]:
    """Import each grain file in a forked child of its own (its module-level code runs
    there, never here); returns grain name -> why it failed, for those that failed.

    The child's stdout goes to stderr (a grain's prints must not reach a command's
    output); the app directory is on ``sys.path`` as on the cluster. A child still
    importing after ``timeout_s`` is killed and reported. Blocking."""
    problems: dict[str, str] = {}
    for name, path in grains.items():
        problem = _probe_import(name, path, app_root, timeout_s)
        if problem is not None:
            problems[name] = problem
    return problems


def _probe_import(name: str, path: Path, app_root: Path, timeout_s: float) -> str | None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, write the error (or nothing), leave through _exit
        code = 0
        try:
            os.close(read_fd)
            os.setpgid(0, 0)
            os.dup2(2, 1)
            sys.stdout = sys.stderr
            sys.path.insert(0, str(app_root))
            load_handler(path, f"sand_probe_{name.replace('-', '_')}")
        except GrainLoadError as exc:
            os.write(write_fd, str(exc).encode("utf-8", "replace")[: 64 * 1024])
        except BaseException:  # nothing may escape a forked child
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    with contextlib.suppress(OSError):  # both sides set it: killpg must not race the child
        os.setpgid(pid, pid)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    timed_out = False
    with os.fdopen(read_fd, "rb") as reader:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([reader], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(reader.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return f"{path}: import did not finish within {timeout_s:g} s"
    if chunks:
        return b"".join(chunks).decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) != 0:
        return f"{path}: import failed: its process ended with {status:#x}"
    return None


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise GrainTimeout in this thread after ``seconds`` (main thread only; else no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise GrainTimeout()

    # _signal, not signal: the latter's wrapper converts to and from enums, Python code a
    # freshly forked instance would run (and copy the pages of) for every task.
    previous = _signal.signal(_SIGALRM, on_alarm)
    _signal.setitimer(_signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_SIGALRM, previous)


def _grain_traceback() -> str:
    """The traceback of the exception being handled, from the grain's own frames: the frame
    of :func:`invoke` that called the handler is SAND's, not the user's, and only made every
    grain's traceback start in ``sand/grain/runner.py``."""
    exc = sys.exception()
    if exc is None:
        return ""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is invoke.__code__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


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
    ``sys.exit`` becomes ``States.TaskFailed``; a ``MemoryError`` under an address-space
    limit (the process backend's memory limit) becomes ``States.Runtime`` naming it; an
    output that is not JSON becomes ``States.Runtime``; one above the payload limit
    ``States.DataLimitExceeded``.
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
            traceback=_grain_traceback(),
            duration_ms=elapsed_ms(),
        )
    except NextGrainError as exc:
        return GrainResult.failure(
            GrainError.RUNTIME,
            str(exc),
            traceback=_grain_traceback(),
            duration_ms=elapsed_ms(),
        )
    except SystemExit as exc:
        return GrainResult.failure(
            GrainError.TASK_FAILED,
            f"grain '{grain}' called sys.exit({exc.code!r})",
            traceback=_grain_traceback(),
            duration_ms=elapsed_ms(),
        )
    except GrainLoadError as exc:  # the grain's file did not import (load_grain)
        return GrainResult.failure(GrainError.RUNTIME, str(exc), duration_ms=elapsed_ms())
    except MemoryError as exc:
        limit_mb = address_space_limit_mb()
        if limit_mb is None:  # not the sandbox's limit: the machine is out of memory
            return GrainResult.failure(type(exc).__name__, str(exc), duration_ms=elapsed_ms())
        return GrainResult.failure(
            GrainError.RUNTIME,
            f"grain '{grain}' ran out of memory: its process reached the sandbox's memory "
            f"limit of {limit_mb} MiB (address space, RLIMIT_AS)",
            duration_ms=elapsed_ms(),
        )
    except BaseException as exc:  # any failure of user code is a result
        return GrainResult.failure(
            type(exc).__name__,
            str(exc),
            traceback=_grain_traceback(),
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


def fork_invocation(
    pool: Pool, handler: Handler, invocation: Invocation, stores: Mapping[Scope, DataStore]
) -> Child:
    """Fork a child of ``pool`` that runs ``invocation`` and delivers its result.

    The deadline starts at the fork; the parent kills the child's group at
    ``invocation.timeout_s`` plus the pool's grace. A result larger than the
    payload limit plus room for a traceback is cut off as ``States.DataLimitExceeded``.
    ``Pool.wait`` returns the child once it ended; its ``outcome()`` is the result.
    """

    def work(channel: Channel) -> None:
        channel.deliver(invoke(handler, invocation, stores))

    return pool.fork(
        work,
        grain=invocation.grain_name,
        timeout_s=invocation.timeout_s,
        wire_limit_bytes=invocation.payload_limit_bytes + _WIRE_SLACK_BYTES,
    )

"""One invocation in a forked child (fork_invocation on a Pool, as the emulator runs it):
every way a grain instance can end becomes an explained GrainResult."""

from __future__ import annotations

import faulthandler
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sand.data import DataStore, Scope
from sand.data.memory import DictDataStore, MemoryDataServer
from sand.grain.child import ChildSetup
from sand.grain.exits import ExitCode, explain_exit
from sand.grain.pool import DEFAULT_SETUP, Pool
from sand.grain.result import GrainError, GrainResult, Invocation, decode_result, encode_result
from sand.grain.runner import GrainLoadError, fork_invocation, invoke, load_handler

from tests.unit.sdk.forking import gone, until_ended


def invocation(grain: str = "g", event: Any = None, **fields: Any) -> Invocation:
    defaults: dict[str, Any] = {"timeout_s": 5.0, "potential_next": frozenset({"next-a"})}
    defaults.update(fields)
    return Invocation("app", grain, "exec-1", event, **defaults)


def run(
    handler: Any,
    inv: Invocation,
    stores: dict[Scope, DataStore],
    *,
    grace_s: float = 0.3,
    setup: ChildSetup = DEFAULT_SETUP,
) -> GrainResult:
    """Fork the invocation and run the pool's monitoring loop until it ended."""
    pool = Pool(grace_s=grace_s, setup=setup)
    child = fork_invocation(pool, handler, inv, stores)
    try:
        (ended,) = until_ended(pool, within_s=8.0)
    finally:
        pool.kill_all()
    assert ended.child is child and not pool.children
    return ended.outcome()


def run_forked(handler: Any, event: Any = None, grace_s: float = 0.3, **fields: Any) -> GrainResult:
    stores: dict[Scope, DataStore] = {"local": DictDataStore(), "global": DictDataStore()}
    return run(handler, invocation(handler.__name__, event, **fields), stores, grace_s=grace_s)


# -- grains used by the tests (module level: the child runs them after the fork) --------


def echo_with_next(event: Any, context: Any) -> Any:
    context.add_next("next-a")
    return {"event": event, "pid": os.getpid(), "pgid": os.getpgid(0)}


def raises_key_error(event: Any, context: Any) -> Any:
    raise KeyError("no such image")


def sleeps(event: Any, context: Any) -> Any:
    time.sleep(30)


def swallows_exceptions(event: Any, context: Any) -> Any:
    try:
        time.sleep(30)
    except Exception:
        return "swallowed"


def ignores_alarm_with_grandchild(event: Any, context: Any) -> Any:
    grandchild = subprocess.Popen(["sleep", "60"])
    Path(event).write_text(str(grandchild.pid))
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(30)


def leaves_grandchild(event: Any, context: Any) -> Any:
    grandchild = subprocess.Popen(["sleep", "60"])
    return grandchild.pid


def segfaults(event: Any, context: Any) -> Any:
    faulthandler.disable()  # pytest enables it; its dump would only be noise here
    os.kill(os.getpid(), signal.SIGSEGV)


def exits_3(event: Any, context: Any) -> Any:
    os._exit(3)


def exits_0(event: Any, context: Any) -> Any:
    os._exit(0)


def calls_sys_exit(event: Any, context: Any) -> Any:
    sys.exit(2)


def returns_bytes(event: Any, context: Any) -> Any:
    return {"blob": b"\x00"}


def returns_nan(event: Any, context: Any) -> Any:
    return math.nan


def returns_big(event: Any, context: Any) -> Any:
    return "x" * 2000


def prints(event: Any, context: Any) -> Any:
    print("printed by the grain", flush=True)
    return "done"


def reports_process_setup(event: Any, context: Any) -> Any:
    return {
        "own_group": os.getpgid(0) == os.getpid(),
        "sigint_default": signal.getsignal(signal.SIGINT) == signal.SIG_DFL,
        "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    }


# -- outcomes -------------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_run_success_returnsOutputAndChosenNext() -> None:
    """A returned value is the output; add_next choices come back as next_grains."""
    result = run_forked(echo_with_next, {"n": 1})
    assert result.ok
    assert result.output["event"] == {"n": 1}
    assert result.output["pid"] != os.getpid()
    assert result.next_grains == ("next-a",)
    assert result.duration_ms > 0


@pytest.mark.timeout(10)
def test_run_childSetup_ownGroupAndDefaultSignals() -> None:
    """The child leads its own process group and has default signal handlers."""
    result = run_forked(reports_process_setup)
    assert result.output == {"own_group": True, "sigint_default": True, "sigterm_default": True}


@pytest.mark.timeout(10)
def test_run_exception_errorIsClassNameCauseIsMessage() -> None:
    """An exception becomes error = class name, cause = message, with the traceback kept apart."""
    result = run_forked(raises_key_error)
    assert (result.error, result.cause) == ("KeyError", "'no such image'")
    assert result.traceback is not None and "raises_key_error" in result.traceback
    # the user's frames only: the runner's own call into the handler is left out
    assert "sand/grain/runner.py" not in result.traceback, result.traceback
    assert result.traceback.startswith("Traceback (most recent call last):")


@pytest.mark.timeout(10)
def test_run_deadline_reportsStatesTimeout() -> None:
    """A grain still running at its deadline is stopped with States.Timeout."""
    started = time.monotonic()
    result = run_forked(sleeps, timeout_s=0.3)
    assert result.error == GrainError.TIMEOUT == "States.Timeout"
    assert "within its timeout of 0.3 s" in (result.cause or "")
    assert time.monotonic() - started < 2.0


@pytest.mark.timeout(10)
def test_run_deadline_cannotBeSwallowedByExceptException() -> None:
    """`except Exception` in the grain does not catch the timeout."""
    assert run_forked(swallows_exceptions, timeout_s=0.3).error == "States.Timeout"


@pytest.mark.timeout(15)
def test_run_deadlineIgnored_killsWholeProcessGroupIncludingGrandchild(tmp_path: Path) -> None:
    """A grain that ignores its deadline is killed with its group (grandchild too) after grace."""
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    result = run_forked(ignores_alarm_with_grandchild, str(pid_file), grace_s=0.3, timeout_s=0.5)
    elapsed = time.monotonic() - started
    assert result.error == "States.Timeout"
    assert "process group was killed" in (result.cause or "")
    assert 0.7 <= elapsed < 3.0
    assert gone(int(pid_file.read_text()))


@pytest.mark.timeout(10)
def test_run_grandchildLeftBehind_isKilledWhenGrainEnds() -> None:
    """Resources of an instance are released when it exits: leftover grandchildren die."""
    result = run_forked(leaves_grandchild)
    assert result.ok
    assert gone(result.output)


@pytest.mark.timeout(10)
def test_run_segfault_reportsSignal() -> None:
    """A child killed by a signal is States.TaskFailed naming the signal."""
    result = run_forked(segfaults)
    assert result.error == "States.TaskFailed"
    assert result.cause == "grain 'segfaults' process was killed by signal SIGSEGV (11)"


@pytest.mark.timeout(10)
def test_run_osExit_reportsExitStatus() -> None:
    """os._exit(3) is States.TaskFailed with the status; os._exit(0) says no result came."""
    result = run_forked(exits_3)
    assert (result.error, result.cause) == (
        "States.TaskFailed",
        "grain 'exits_3' process exited with status 3",
    )
    assert "status 0 without returning a result" in (run_forked(exits_0).cause or "")


@pytest.mark.timeout(10)
def test_run_sysExit_reportsTaskFailed() -> None:
    """sys.exit in a grain is a failure, not a silent success."""
    result = run_forked(calls_sys_exit)
    assert result.error == "States.TaskFailed"
    assert result.cause == "grain 'calls_sys_exit' called sys.exit(2)"


@pytest.mark.timeout(10)
def test_run_nonJsonOutput_reportsStatesRuntime() -> None:
    """Outputs that are not JSON (bytes, NaN) are States.Runtime."""
    result = run_forked(returns_bytes)
    assert result.error == "States.Runtime"
    assert "not JSON-serialisable" in (result.cause or "")
    assert run_forked(returns_nan).error == "States.Runtime"


@pytest.mark.timeout(10)
def test_run_oversizeOutput_reportsDataLimitExceeded() -> None:
    """An output above the payload limit is States.DataLimitExceeded with both sizes."""
    result = run_forked(returns_big, payload_limit_bytes=1024)
    assert result.error == "States.DataLimitExceeded"
    assert result.cause == (
        "output of grain 'returns_big' is 2002 bytes, above the payload limit of 1024 bytes"
    )


@pytest.mark.timeout(10)
def test_run_stdoutToStderr_keepsStdoutClean(capfd: pytest.CaptureFixture[str]) -> None:
    """With stdout_to_stderr, a grain's prints go to stderr."""
    stores: dict[Scope, DataStore] = {"local": DictDataStore()}
    result = run(prints, invocation("prints"), stores, setup=ChildSetup(stdout_to_stderr=True))
    assert result.output == "done"
    out, err = capfd.readouterr()
    assert "printed by the grain" in err
    assert "printed by the grain" not in out


@pytest.mark.timeout(10)
def test_run_dataWrittenInChild_visibleInParent() -> None:
    """A forked grain writes to the shared in-memory data layer."""

    def writes(event: Any, context: Any) -> Any:
        context.data.put("seen", {"pid": os.getpid()})
        return None

    with MemoryDataServer() as server:
        stores: dict[Scope, DataStore] = {"local": server.store("app", "local")}
        assert run(writes, invocation("writes"), stores).ok
        assert json.loads(server.snapshot("app", "local")["seen"][1:])["pid"] != os.getpid()


# -- in-process pieces (what a grain worker's child runs) -----------------------------------


def test_invoke_inProcess_normalisesOutputAsJson() -> None:
    """invoke returns the output as the next grain sees it (tuples become lists)."""
    result = invoke(lambda e, c: (1, {"a": (2,)}), invocation(), {})
    assert result.output == [1, {"a": [2]}]


def test_encodeDecode_roundTrip() -> None:
    """The wire format keeps every field of success and failure results."""
    ok = GrainResult(output={"x": [1]}, next_grains=("a",), duration_ms=1.5)
    failed = GrainResult.failure("E", "why", traceback="tb", duration_ms=2.0)
    assert decode_result(encode_result(ok)) == ok
    assert decode_result(encode_result(failed)) == failed


def test_explainExit_explainsStatuses() -> None:
    """Wait statuses map to States.TaskFailed / States.Timeout with a readable cause."""
    killed = explain_exit("g", signal.SIGKILL)  # waitpid status of a SIGKILLed child
    assert killed.cause == "grain 'g' process was killed by signal SIGKILL (9)"
    assert explain_exit("g", 5 << 8).cause == "grain 'g' process exited with status 5"
    timed_out = explain_exit("g", signal.SIGKILL, timed_out=True, timeout_s=2)
    assert timed_out.error == "States.Timeout"


def test_explainExit_runnerFailed_namesTheRunnerNotTheGrain() -> None:
    """The runner's own exit code is named, and points at the logs for its traceback."""
    failed = explain_exit("g", ExitCode.RUNNER_FAILED << 8)
    assert failed.error == "States.TaskFailed"
    assert "status 70 (RUNNER_FAILED" in (failed.cause or "")


def test_loadHandler_importFailure_namesFile(tmp_path: Path) -> None:
    """A grain file that fails at import, or has no handle, raises GrainLoadError naming it."""
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_anywhere\n")
    with pytest.raises(GrainLoadError, match=r"broken.py: import failed: ModuleNotFoundError"):
        load_handler(broken, "test_broken_grain")
    empty = tmp_path / "empty.py"
    empty.write_text("handle = None\n")
    with pytest.raises(GrainLoadError, match="must be a callable"):
        load_handler(empty, "test_empty_grain")
    ok = tmp_path / "ok.py"
    ok.write_text("def handle(event, context):\n    return event\n")
    assert load_handler(ok, "test_ok_grain")(5, None) == 5  # type: ignore[arg-type]


def chooses_unknown_next(event: Any, context: Any) -> Any:
    context.add_next("nowhere")


@pytest.mark.timeout(10)
def test_run_uncaughtBadNextGrain_reportsStatesRuntime() -> None:
    """add_next outside potentialNext, left uncaught, fails the task with States.Runtime."""
    result = run_forked(chooses_unknown_next)
    assert result.error == "States.Runtime"
    assert "cannot send to 'nowhere'" in (result.cause or "")


@pytest.mark.timeout(10)
def test_run_oversizeWire_killsChildAndReportsDataLimitExceeded() -> None:
    """A frame above the child's wire limit gets it killed at once: DataLimitExceeded."""
    pool = Pool(grace_s=0.3)
    child = pool.fork(
        lambda channel: channel.deliver(GrainResult(output="x" * 4096)),
        grain="g",
        wire_limit_bytes=1024,
    )
    ended = until_ended(pool)
    assert child.oversize and child.killed
    assert ended[0].outcome().cause == "grain 'g' sent more than 1024 bytes of result"

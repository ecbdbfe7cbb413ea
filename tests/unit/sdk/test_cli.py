"""`sand emulate` and `sand validate`: stdout carries one JSON line, exit codes mean one thing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sand.cli import cli

from .conftest import EXAMPLES, AppFactory

HELLO_INPUT = '{"name": "  ada   lovelace "}'
HELLO_OUTPUT = {"name": "Ada Lovelace", "greeting": "Hello, Ada Lovelace!", "times_greeted": 1}


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner(mix_stderr=False).invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.timeout(30)
def test_emulate_success_printsOneJsonLineExit0() -> None:
    """The output is exactly one JSON line on stdout."""
    code, out, err = invoke("emulate", str(EXAMPLES / "hello"), "--input", HELLO_INPUT)
    assert code == 0, err
    assert out.count("\n") == 1
    assert json.loads(out) == HELLO_OUTPUT


@pytest.mark.timeout(30)
def test_emulate_failure_printsErrorAndCauseExit1() -> None:
    """A failed execution prints {"Error", "Cause"} on stdout and exits 1."""
    code, out, _ = invoke("emulate", str(EXAMPLES / "hello"), "--input", '{"name": ""}')
    assert code == 1
    assert json.loads(out) == {"Error": "ValueError", "Cause": "the input needs a non-empty 'name'"}


@pytest.mark.timeout(30)
def test_emulate_trace_printsStepsOnStderr() -> None:
    """--trace prints each history event (state, input, output, duration) on stderr only."""
    code, out, err = invoke("emulate", str(EXAMPLES / "hello"), "--input", HELLO_INPUT, "--trace")
    assert code == 0
    assert json.loads(out) == HELLO_OUTPUT
    for grain in ("normalize", "greet", "shout"):
        assert grain in err
    assert '"greeting":"Hello, Ada Lovelace!"' in err
    assert "TaskSucceeded" in err and "ExecutionSucceeded" in err
    assert " ms" in err and "SUCCEEDED" in err


@pytest.mark.timeout(30)
def test_emulate_inputFile_andNoWait(tmp_path: Path) -> None:
    """--input-file reads the input; --no-wait skips the 1 s waits of asl-orders."""
    case = json.loads((EXAMPLES / "asl-orders/expected.json").read_text())["main"]
    path = tmp_path / "input.json"
    path.write_text(json.dumps(case["input"]))
    code, out, _ = invoke(
        "emulate", str(EXAMPLES / "asl-orders"), "--input-file", str(path), "--no-wait"
    )
    assert code == 0
    assert json.loads(out) == case["output"]


def test_emulate_badInputJson_namesInputExit2() -> None:
    """Malformed input JSON is a usage error naming the option, exit 2, no traceback."""
    code, out, err = invoke("emulate", str(EXAMPLES / "hello"), "--input", "{name: 1}")
    assert code == 2
    assert out == ""
    assert "--input" in err and "not valid JSON" in err
    assert "Traceback" not in err


def test_emulate_inputAndInputFile_exclusive(tmp_path: Path) -> None:
    """Giving both --input and --input-file is refused."""
    path = tmp_path / "in.json"
    path.write_text("{}")
    code, _, err = invoke(
        "emulate", str(EXAMPLES / "hello"), "--input", "{}", "--input-file", str(path)
    )
    assert code == 2 and "not both" in err


def test_emulate_invalidApp_printsEveryProblemExit2(make_app: AppFactory) -> None:
    """An invalid app lists each problem on stderr and exits 2."""
    root = make_app("name: Bad\ngrains: {a: missing.py}\nworkflows: {}\n")
    code, out, err = invoke("emulate", str(root), "--input", "{}")
    assert code == 2
    assert out == ""
    assert "name: 'Bad' must match [a-z0-9][a-z0-9-]{0,62}" in err
    assert "grains.a: file missing.py does not exist" in err
    assert "workflows: must be a non-empty mapping" in err


def test_emulate_unknownWorkflow_exit2() -> None:
    """Asking for a workflow the app does not have is exit 2 with the names it has."""
    code, _, err = invoke("emulate", str(EXAMPLES / "hello"), "--workflow", "nope")
    assert code == 2
    assert "no workflow called 'nope' (the app has: main)" in err


def test_validate_appDir_ok() -> None:
    """A valid app directory prints ok."""
    code, out, _ = invoke("validate", str(EXAMPLES / "asl-orders"))
    assert (code, out) == (0, "ok\n")


def test_validate_workflowFile_bothFormats() -> None:
    """A workflow file, JSON (ASL) or YAML (native), validates on its own."""
    assert invoke("validate", str(EXAMPLES / "asl-orders/workflows/main.json"))[:2] == (0, "ok\n")
    assert invoke("validate", str(EXAMPLES / "hello/workflows/main.yaml"))[:2] == (0, "ok\n")


def test_validate_invalid_printsEveryProblemExit1(tmp_path: Path, make_app: AppFactory) -> None:
    """Problems of a file or an app are all printed; the exit status is 1."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("StartAt: A\nStates:\n  A: {Type: Pass, Next: B}\n  C: {Type: Bogus}\n")
    code, _, err = invoke("validate", str(bad))
    assert code == 1
    assert err.count("bad.yaml") >= 2
    code, _, err = invoke("validate", str(make_app("name: x\n")))
    assert code == 1
    assert "grains: is required" in err and "workflows: is required" in err


@pytest.mark.timeout(60)
def test_exitCodes_throughRealProcess(tmp_path: Path) -> None:
    """Run as a program: 0 success, 1 failed execution, 2 bad input; stdout is one JSON line."""

    def sand(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).parent / "sand"), *args],
            capture_output=True,
            text=True,
            timeout=30,
        )

    ok = sand("emulate", str(EXAMPLES / "hello"), "--input", HELLO_INPUT)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines() == [json.dumps(HELLO_OUTPUT)]
    failed = sand("emulate", str(EXAMPLES / "hello"), "--input", '{"name": ""}')
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["Error"] == "ValueError"
    bad = sand("emulate", str(EXAMPLES / "hello"), "--input", "[1,")
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert sand("validate", str(EXAMPLES / "fanout")).returncode == 0


@pytest.mark.timeout(30)
def test_emulate_inputFileDash_readsStdin() -> None:
    """--input-file - reads the input from stdin; bad JSON there names stdin."""
    runner = CliRunner(mix_stderr=False)
    args = ["emulate", str(EXAMPLES / "hello"), "--input-file", "-"]
    ok = runner.invoke(cli, args, input=HELLO_INPUT)
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout) == HELLO_OUTPUT
    bad = runner.invoke(cli, args, input="{")
    assert bad.exit_code == 2
    assert "stdin is not valid JSON" in bad.stderr

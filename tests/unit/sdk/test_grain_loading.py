"""A grain that fails to import is an error of that grain only: load_grain gives a handler
that fails each event with States.Runtime naming the import error; import_problems tries
each import in a child process (sand validate warns, never crashes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sand.cli import cli
from sand.grain.result import GrainError, Invocation
from sand.grain.runner import GrainLoadError, import_problems, invoke, load_grain

from .conftest import ECHO_GRAIN, AppFactory

BROKEN = "import no_such_module_for_sand\n\ndef handle(event, context):\n    return event\n"


def _invocation() -> Invocation:
    return Invocation(
        app_name="x",
        grain_name="broken",
        execution_id="e-1",
        input={"a": 1},
        timeout_s=5,
        payload_limit_bytes=1 << 20,
        potential_next=frozenset(),
        state={},
    )


def test_loadGrain_fine_returnsItsHandle(tmp_path: Path) -> None:
    """A grain that imports: its own handle, and no error."""
    path = tmp_path / "ok.py"
    path.write_text(ECHO_GRAIN)
    handler, error = load_grain("ok", path, "sand_test_load_ok")
    assert error is None
    assert handler({"x": 1}, None) == {"x": 1}  # type: ignore[arg-type]


def test_loadGrain_importFails_eachEventFailsWithStatesRuntime(tmp_path: Path) -> None:
    """The error names the grain, its file and the exception; every invocation of the
    handler is a States.Runtime failure with that cause (not an exception of the caller)."""
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    handler, error = load_grain("broken", path, "sand_test_load_broken")
    assert isinstance(error, GrainLoadError)
    assert str(error) == (
        f"grain 'broken' cannot run: {path}: import failed: ModuleNotFoundError: "
        "No module named 'no_such_module_for_sand'"
    )
    for _ in range(2):
        result = invoke(handler, _invocation(), {})
        assert result.error == GrainError.RUNTIME
        assert result.cause == str(error)


@pytest.mark.timeout(30)
def test_importProblems_reportsOnlyTheBrokenGrains_runsNothingHere(tmp_path: Path) -> None:
    """Each grain is imported in a child: the broken ones are reported; module-level
    code does not run in the caller (its sys.modules and stdout are untouched)."""
    (tmp_path / "ok.py").write_text("print('imported ok')\n" + ECHO_GRAIN)
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    problems = import_problems(
        {name: tmp_path / f"{name}.py" for name in ("ok", "broken", "exits")}, tmp_path
    )
    assert sorted(problems) == ["broken", "exits"]
    assert "ModuleNotFoundError: No module named 'no_such_module_for_sand'" in problems["broken"]
    assert "import failed: SystemExit: 3" in problems["exits"]
    import sys

    assert "sand_probe_ok" not in sys.modules


@pytest.mark.timeout(30)
def test_importProblems_hangingImport_isKilledAndReported(tmp_path: Path) -> None:
    """An import that never finishes is killed after the timeout and reported."""
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(60)\n")
    problems = import_problems({"slow": tmp_path / "slow.py"}, tmp_path, timeout_s=0.5)
    assert problems == {"slow": f"{tmp_path / 'slow.py'}: import did not finish within 0.5 s"}


@pytest.mark.timeout(60)
def test_validate_grainThatDoesNotImport_isAWarning(make_app: AppFactory) -> None:
    """sand validate: the app is valid (exit 0, ok) and the import failure is a warning
    naming the grain, the file and the exception; --json lists it; --no-import skips it.
    A grain's print at import does not reach stdout."""
    root = make_app(
        "name: x\ngrains: {a: a.py, b: b.py}\nworkflows: {main: wf.yaml}\n",
        {
            "a.py": BROKEN,
            "b.py": "print('noise')\n" + ECHO_GRAIN,
            "wf.yaml": "entry: b\ngrains: {b: {}}\n",
        },
    )
    runner = CliRunner(mix_stderr=False)
    result = runner.invoke(cli, ["validate", str(root)])
    assert result.exit_code == 0
    assert result.stdout == "ok\n"
    assert (
        f"warning: grain 'a' does not import: {root}/a.py: import failed: "
        "ModuleNotFoundError: No module named 'no_such_module_for_sand'"
    ) in result.stderr
    document = json.loads(runner.invoke(cli, ["validate", str(root), "--json"]).stdout)
    assert document["ok"] is True and len(document["warnings"]) == 1
    quiet = runner.invoke(cli, ["validate", str(root), "--no-import"])
    assert (quiet.exit_code, quiet.stderr) == (0, "")

"""`sand init NAME`: a runnable app whose own test passes and that `sand validate` accepts;
refusals of a bad name and of a non-empty directory; `sand schema`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result
from sand.cli import cli
from sand.emulator import emulate
from sand.schemas import load_schema


def run(*args: str) -> Result:
    return CliRunner(mix_stderr=False).invoke(cli, list(args))


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.timeout(120)
def test_init_scaffold_validates_emulates_andItsTestPasses(cwd: Path) -> None:
    """The scaffold: validate says ok (no import warning), the workflow runs, and the
    generated pytest test passes when run as the user would (pytest in the app dir)."""
    result = run("init", "my-app")
    assert result.exit_code == 0, result.stderr
    root = cwd / "my-app"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        ".schemas/app.schema.json",
        ".schemas/workflow.schema.json",
        "README.md",
        "app.yaml",
        "grains/greet.py",
        "grains/normalize.py",
        "tests/test_app.py",
        "workflows/main.yaml",
    ]
    validated = run("validate", str(root))
    assert (validated.exit_code, validated.stdout, validated.stderr) == (0, "ok\n", "")
    assert emulate(root, {"name": "bo"}).output == {"greeting": "Hello, Bo!", "times_greeted": 1}
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("template", ["native", "asl"])
def test_init_nextCommands_workAsPrinted(cwd: Path, template: str) -> None:
    """Issue 24: the "next" line `sand init` prints ran an emulation with `{}`, which the
    template's own grain refuses. Each template's line, run by a shell as printed (with this
    interpreter's `sand` and `pytest` first on PATH), validates, tests and emulates."""
    result = run("init", "demo", "--template", template)
    assert result.exit_code == 0, result.stderr
    assert f"({template} workflow)" in result.stderr
    line = next(text for text in result.stderr.splitlines() if text.startswith("next: "))
    done = subprocess.run(
        ["bash", "-c", line.removeprefix("next: ")],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=150,
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '{"greeting": "Hello, Ada!", "times_greeted": 1}' in done.stdout
    assert "2 passed" in done.stdout


def test_init_asl_failsABadNameInItsFailState(cwd: Path) -> None:
    """The ASL template catches the grain's ValueError and ends in its Fail state."""
    assert run("init", "demo", "--template", "asl").exit_code == 0
    workflow = yaml.safe_load((cwd / "demo/workflows/main.yaml").read_text())
    assert workflow["StartAt"] == "Normalize"
    failed = emulate(cwd / "demo", {"name": "  "})
    assert (failed.error, failed.cause) == ("BadInput", "the input needs a non-empty 'name'")
    assert run("validate", str(cwd / "demo")).stdout == "ok\n"


def test_init_scaffold_namesTheSchemas_andPassesThem(cwd: Path) -> None:
    """app.yaml and the workflow name their schema for editors, and pass it."""
    assert run("init", "demo").exit_code == 0
    app_yaml = (cwd / "demo/app.yaml").read_text()
    workflow = (cwd / "demo/workflows/main.yaml").read_text()
    assert app_yaml.startswith("# yaml-language-server: $schema=.schemas/app.schema.json\n")
    assert workflow.startswith("# yaml-language-server: $schema=../.schemas/workflow.schema.json\n")
    assert (cwd / "demo/workflows" / "../.schemas/workflow.schema.json").resolve().is_file()
    jsonschema.validate(yaml.safe_load(app_yaml), load_schema("app"))
    jsonschema.validate(yaml.safe_load(workflow), load_schema("workflow"))
    assert json.loads((cwd / "demo/.schemas/app.schema.json").read_text()) == load_schema("app")


def test_init_invalidName_refusedWithTheRule(cwd: Path) -> None:
    """An invalid app name: exit 2, the rule, nothing written."""
    result = run("init", "My_App")
    assert result.exit_code == 2
    assert "'My_App' is not a valid application name: it must match [a-z0-9][a-z0-9-]{0,62}" in (
        result.stderr
    )
    assert list(cwd.iterdir()) == []


def test_init_existingNonEmptyDirectory_refused_leftAlone(cwd: Path) -> None:
    """./NAME with files in it is refused and left as it was; an empty one is used."""
    (cwd / "taken").mkdir()
    (cwd / "taken/notes.txt").write_text("mine")
    result = run("init", "taken")
    assert result.exit_code == 2
    assert "./taken exists and is a directory that is not empty" in result.stderr
    assert [p.name for p in (cwd / "taken").iterdir()] == ["notes.txt"]
    (cwd / "empty").mkdir()
    assert run("init", "empty").exit_code == 0
    assert (cwd / "empty/app.yaml").is_file()


def test_init_json_listsTheFiles(cwd: Path) -> None:
    """--json: {"app", "path", "template", "files"} on stdout."""
    result = run("init", "j", "--json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["app"] == "j" and document["path"] == str(cwd / "j")
    assert document["template"] == "native"
    assert "tests/test_app.py" in document["files"]


def test_schema_printsThePackagedSchema() -> None:
    """`sand schema app|workflow` prints the schema shipped in the package."""
    for which in ("app", "workflow"):
        result = run("schema", which)
        assert result.exit_code == 0
        assert json.loads(result.stdout) == load_schema(which)
    assert run("schema", "nope").exit_code == 2

"""load_app_apart: the sandbox's main process loads its app in a forked child and gets
the same AppSpec, or the same problems, as ``load_app`` gives in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sand.app import AppError, load_app
from sand_worker.loading import load_app_apart

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("app", ["hello", "asl-orders", "jsonata-quote"])
def test_load_app_apart_example_equalsLoadApp(app: str) -> None:
    """An example app comes back equal to what load_app gives, its mappings read-only."""
    loaded = load_app_apart(EXAMPLES / app)
    assert loaded == load_app(EXAMPLES / app)
    with pytest.raises(TypeError):
        loaded.grains["x"] = loaded.grains[next(iter(loaded.grains))]  # type: ignore[index]


@pytest.mark.timeout(30)
def test_load_app_apart_brokenApp_raisesAppErrorWithTheProblems(tmp_path: Path) -> None:
    """An invalid app raises AppError listing the same problems as load_app."""
    (tmp_path / "app.yaml").write_text("name: broken\ngrains: {a: missing.py}\n")
    with pytest.raises(AppError) as apart:
        load_app_apart(tmp_path)
    with pytest.raises(AppError) as here:
        load_app(tmp_path)
    assert apart.value.problems == here.value.problems


@pytest.mark.timeout(60)
def test_load_app_apart_leavesTheLoadersOutOfThisProcess() -> None:
    """The YAML parser and the workflow loaders are imported by the child only."""
    probe = (
        "import sys; from sand_worker.loading import load_app_apart; "
        f"load_app_apart({str(EXAMPLES / 'asl-orders')!r}); "
        "print(sorted(m for m in ('yaml', 'sand_workflows.loader', 'sand_workflows.asl_loader')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=os.environ, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"

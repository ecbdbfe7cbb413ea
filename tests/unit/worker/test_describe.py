"""The app description the host agent stores as the app's metadata (sand_worker.describe)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sand.app import load_app
from sand_worker.describe import describe, main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_describe_listsGrainsWithTheirInstanceMode(tmp_path: Path) -> None:
    """Each grain's events_per_instance is described: 1 for the short form, N for a grain
    that opted in to reuse."""
    app_dir = tmp_path / "hello"
    shutil.copytree(EXAMPLES / "hello", app_dir)
    manifest = app_dir / "app.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "  greet: grains/greet.py\n",
            "  greet:\n    file: grains/greet.py\n    events_per_instance: 7\n",
        )
    )
    described = describe(load_app(app_dir))
    assert described["grains"] == ["normalize", "greet", "shout"]
    assert described["events_per_instance"] == {"normalize": 1, "greet": 7, "shout": 1}
    assert described["workflows"] == {"main": {"entry_grain": "normalize"}}


def test_main_invalidApp_printsProblemsAndExits1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_dir = tmp_path / "broken"
    shutil.copytree(EXAMPLES / "hello", app_dir)
    manifest = app_dir / "app.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "  greet: grains/greet.py\n", "  greet:\n    events_per_instance: many\n"
        )
    )
    assert main([str(app_dir)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert f"{app_dir}/app.yaml: grains.greet.file: is required (the grain's Python file)" in (
        problems
    )
    assert any("grains.greet.events_per_instance: must be an integer >= 1" in p for p in problems)

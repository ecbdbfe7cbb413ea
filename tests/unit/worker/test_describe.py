"""The app description the host agent stores as the app's metadata (sand_worker.describe)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sand.app import load_app
from sand_worker.describe import describe, main, workflow_sources

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


def test_main_withHostsAndPlacement_describesItResolved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--hosts resolves the placement (every grain with its hosts, in cluster order);
    --placement replaces the manifest's."""
    app_dir = tmp_path / "hello"
    shutil.copytree(EXAMPLES / "hello", app_dir)
    placement = json.dumps({"hosts": ["h2", "h1"], "grains": {"greet": ["h2"]}})
    assert main([str(app_dir), "--hosts", "h1,h2,h3", "--placement", placement]) == 0
    described = json.loads(capsys.readouterr().out)["app"]
    assert described["placement"] == {
        "hosts": ["h1", "h2"],
        "grains": {"normalize": ["h1", "h2"], "greet": ["h2"], "shout": ["h1", "h2"]},
    }


def test_main_placementNamingUnknownHost_exits1NamingTheRequest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A placement override with a host the cluster lacks is refused, located in the request."""
    app_dir = tmp_path / "hello"
    shutil.copytree(EXAMPLES / "hello", app_dir)
    assert main([str(app_dir), "--hosts", "h1", "--placement", '{"hosts": ["h9"]}']) == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [
        "deploy request: placement.hosts: unknown host 'h9' (the cluster's hosts: h1)"
    ]


def test_main_placementNotJson_exits2WithUsage(capsys: pytest.CaptureFixture[str]) -> None:
    """A --placement that is not JSON is a usage error, reported as JSON (never a traceback)."""
    assert main([str(EXAMPLES / "hello"), "--placement", "{hosts"]) == 2
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem.startswith("usage: python -m sand_worker.describe")


def test_main_validApp_printsEachWorkflowsKindDefinitionAndSource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent keeps these to answer GET /v1/apps/{app}/workflows/{workflow}: the file
    relative to the app, the format, the parsed definition and the text as written."""
    app_dir = tmp_path / "asl-orders"
    shutil.copytree(EXAMPLES / "asl-orders", app_dir)
    assert main([str(app_dir)]) == 0
    document = json.loads(capsys.readouterr().out)
    main_wf = document["workflow_sources"]["main"]
    assert main_wf["kind"] == "asl"
    assert main_wf["file"] == "workflows/main.json"
    assert main_wf["source"] == (app_dir / "workflows" / "main.json").read_text()
    assert "StartAt" in main_wf["definition"]
    # the metadata itself stays as it was: the sources are beside it, not in it
    assert "workflow_sources" not in document["app"]


def test_workflowSources_nativeWorkflow_isKindNative(tmp_path: Path) -> None:
    app_dir = tmp_path / "hello"
    shutil.copytree(EXAMPLES / "hello", app_dir)
    sources = workflow_sources(load_app(app_dir))
    assert sources["main"]["kind"] == "native"
    assert sources["main"]["definition"]["entry"] == "normalize"

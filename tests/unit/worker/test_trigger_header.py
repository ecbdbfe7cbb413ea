"""What started an execution, on the worker's side (decision 0034): the INVOKE's
``sand-trigger`` header reaches the ExecutionStarted history event parsed (never failing
the execution when it is not JSON), travels on with the events made from the INVOKE (the
grain that ends the execution puts it in the result document), and the app's description
lists its triggers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sand.app import load_app
from sand.contracts import HEADER_CALLBACK, HEADER_NAME, HEADER_STARTED_MS, HEADER_TRIGGER
from sand.localbus import LocalBus
from sand_bus.ttypes import EventKind, EventMessage
from sand_worker.bus import encode, new_event, started_by, trigger_of
from sand_worker.config import WorkerConfig
from sand_worker.describe import describe, main
from sand_worker.instance import EventHandler, Grain

TRIGGER = {"name": "nightly", "kind": "schedule", "time": "2026-11-27T02:00:00Z"}
APP_YAML = """\
name: shop
grains:
  first: grains/first.py
workflows:
  main: workflows/main.yaml
triggers:
  nightly: {schedule: "cron(0 3 * * 1-5)", timezone: Europe/Paris}
  orders: {topic: shop.orders}
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "grains").mkdir(parents=True)
    (root / "workflows").mkdir()
    (root / "app.yaml").write_text(APP_YAML)
    (root / "grains/first.py").write_text("def handle(event, context):\n    return event\n")
    (root / "workflows/main.yaml").write_text("entry: first\ngrains:\n  first: {}\n")
    return root


def invoke(headers: dict[str, str]) -> EventMessage:
    return EventMessage(
        execution_id="e1",
        app="shop",
        workflow="main",
        kind=EventKind.INVOKE,
        target_grain="first",
        payload=b"{}",
        created_ms=1_000,
        headers={HEADER_STARTED_MS: "1000", **headers},
    )


def started_event(app_dir: Path, headers: dict[str, str]) -> dict[str, object]:
    """The ExecutionStarted the worker records for an INVOKE with ``headers`` (its first task
    is the worker's own grain, so the step stops before any Redis command)."""
    config = WorkerConfig.from_env(
        {"SAND_APP": "shop", "SAND_APP_DIR": str(app_dir), "SAND_REDIS_SOCKET": "/nonexistent"}
    )
    grain = Grain(load_app(app_dir), "first", lambda event, context: event)
    handler = EventHandler(grain, config, LocalBus("/nonexistent"))
    pending = handler.begin(encode(invoke(headers)))
    assert pending is not None and pending.step.recorder is not None
    events = pending.step.recorder.events
    return next(e for e in events if e["type"] == "ExecutionStarted")


def test_invokeFromATrigger_recordsItOnExecutionStarted(app_dir: Path) -> None:
    """The header's JSON object becomes the event's ``trigger``, beside the name."""
    started = started_event(
        app_dir, {HEADER_TRIGGER: json.dumps(TRIGGER), HEADER_NAME: "nightly-20261127T020000Z"}
    )
    assert started["trigger"] == TRIGGER
    assert started["name"] == "nightly-20261127T020000Z"
    assert started["app"] == "shop" and started["started_ms"] == 1000


@pytest.mark.parametrize("header", [None, "", "{not json", '"a string"', "[1, 2]", "[" * 5000])
def test_anAbsentOrUnusableHeader_recordsNoTrigger_andTheExecutionStarts(
    app_dir: Path, header: str | None
) -> None:
    """Absent, empty, not JSON, not an object, too deep: no ``trigger``, nothing fails."""
    headers = {} if header is None else {HEADER_TRIGGER: header}
    started = started_event(app_dir, headers)
    assert "trigger" not in started


def test_startedBy_readsTheNameAndTheTrigger() -> None:
    assert started_by(None) == {"name": None, "trigger": None}
    assert started_by({HEADER_NAME: "", HEADER_TRIGGER: json.dumps(TRIGGER)}) == {
        "name": None,
        "trigger": TRIGGER,
    }


def test_eventsMadeFromTheInvoke_carryTheTrigger_notACallbacksWait() -> None:
    """The trigger travels with the execution's events (like its start), so the grain that
    ends it writes it into the result document; a callback's wait stays on its TIMER."""
    source = invoke({HEADER_TRIGGER: json.dumps(TRIGGER), HEADER_NAME: "n", HEADER_CALLBACK: "{}"})
    made = new_event(source, kind=EventKind.TIMER)
    assert made.headers == {
        HEADER_STARTED_MS: "1000",
        HEADER_NAME: "n",
        HEADER_TRIGGER: json.dumps(TRIGGER),
    }
    assert trigger_of(made.headers) == TRIGGER
    assert source.headers is not None and HEADER_CALLBACK in source.headers  # left as it was
    plain = invoke({HEADER_NAME: "n"})
    assert new_event(plain, kind=EventKind.TIMER).headers is plain.headers


def test_describe_listsTheTriggers(app_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``triggers`` in the description: sorted, defaults filled; printed by main."""
    described = describe(load_app(app_dir))
    assert described["triggers"] == [
        {
            "name": "nightly",
            "kind": "schedule",
            "schedule": "cron(0 3 * * 1-5)",
            "timezone": "Europe/Paris",
            "workflow": "main",
            "input": {},
            "missed": "run_once",
        },
        {"name": "orders", "kind": "topic", "topic": "shop.orders", "workflow": "main"},
    ]
    assert main([str(app_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["app"]["triggers"] == described["triggers"]


def test_describe_appWithoutTriggers_listsNone(app_dir: Path) -> None:
    manifest = app_dir / "app.yaml"
    manifest.write_text(manifest.read_text().split("triggers:")[0])
    assert describe(load_app(app_dir))["triggers"] == []

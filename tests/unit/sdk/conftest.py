"""Helpers for the SDK tests: build application directories in a temporary folder; the
identity twin (``tests.unit.fake_sand``) and an environment of the test's own for the tests
of a client against it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fake_sand import FakeSand, Store, fake_sand

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

AppFactory = Callable[..., Path]


@pytest.fixture
def make_app(tmp_path: Path) -> AppFactory:
    """``make_app(app_yaml, files={path: text})`` writes an app directory and returns it."""

    def make(app_yaml: str, files: dict[str, str] | None = None, name: str = "app") -> Path:
        root = tmp_path / name
        root.mkdir()
        (root / "app.yaml").write_text(textwrap.dedent(app_yaml))
        for rel, text in (files or {}).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return root

    return make


ECHO_GRAIN = "def handle(event, context):\n    return event\n"
CHAIN_WORKFLOW = """\
entry: first
grains:
  first: {next: second}
  second: {}
"""


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No $SAND_TOKEN, $SAND_URL or $SAND_CONFIG; a credentials file and a state dir of the
    test's own."""
    for name in ("SAND_TOKEN", "SAND_URL", "SAND_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SAND_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def sand() -> Iterator[FakeSand]:
    """The identity twin with the users admin (admin) and ada (user)."""
    store = Store()
    store.add_user("admin", "admin")
    store.add_user("ada")
    with fake_sand(store) as running:
        yield running


@dataclass(frozen=True)
class Seeded:
    """The executions ``seeded`` recorded in the twin: ada's app ``shop`` (one failed with a
    history through a Parallel, one running, one succeeded) and admin's app ``ops``."""

    sand: FakeSand
    failed: str
    running: str
    succeeded: str
    admins: str


FAILED_HISTORY: list[dict[str, Any]] = [
    {
        "type": "ExecutionStarted",
        "at_ms": 1000,
        "input": {"order": 7},
        "workflow": "main",
        "app": "shop",
        "name": None,
        "redrive_count": 0,
    },
    {"type": "StateEntered", "at_ms": 1001, "state": "Charge", "input": {"order": 7}},
    {
        "type": "TaskScheduled",
        "at_ms": 1002,
        "state": "Charge",
        "grain": "charge",
        "input": {"order": 7},
        "timeout_s": 30,
    },
    {
        "type": "TaskStarted",
        "at_ms": 1003,
        "state": "Charge",
        "grain": "charge",
        "host": "host-1",
        "pid": 4242,
        "attempt": 1,
    },
    {
        "type": "TaskSucceeded",
        "at_ms": 1010,
        "state": "Charge",
        "grain": "charge",
        "host": "host-1",
        "pid": 4242,
        "output": {"paid": True},
        "duration_ms": 7,
    },
    {
        "type": "StateExited",
        "at_ms": 1011,
        "state": "Charge",
        "output": {"paid": True},
        "steps": {"result": {"paid": True}},
    },
    {"type": "ParallelStarted", "at_ms": 1012, "state": "Fan", "branches": 2},
    {
        "type": "TaskStarted",
        "at_ms": 1013,
        "state": "Ship",
        "path": "Fan[1]",
        "grain": "ship",
        "host": "host-1",
        "pid": 4243,
        "attempt": 1,
    },
    {
        "type": "TaskFailed",
        "at_ms": 1513,
        "state": "Ship",
        "path": "Fan[1]",
        "grain": "ship",
        "host": "host-1",
        "pid": 4243,
        "error": "ValueError",
        "cause": "no address [a-z]+ for order 7",
        "duration_ms": 500,
    },
    {
        "type": "BranchFailed",
        "at_ms": 1514,
        "state": "Fan",
        "path": "Fan[1]",
        "error": "ValueError",
        "cause": "no address [a-z]+ for order 7",
    },
    {
        "type": "ExecutionFailed",
        "at_ms": 1515,
        "error": "ValueError",
        "cause": "no address [a-z]+ for order 7",
    },
]


@pytest.fixture
def seeded(sand: FakeSand) -> Seeded:
    """``sand`` with ada's app ``shop`` and admin's app ``ops``, and their executions."""
    store = sand.store.executions
    store.add_app("shop", "ada")
    store.add_app("ops", "admin")
    base = 1_767_225_600_000
    failed = store.add(
        {
            "app": "shop",
            "status": "FAILED",
            "input": {"order": 7},
            "started_ms": base,
            "finished_ms": base + 515,
            "error": "ValueError",
            "cause": "no address [a-z]+ for order 7",
        },
        FAILED_HISTORY,
    )
    running = store.add(
        {"app": "shop", "status": "RUNNING", "started_ms": base + 1000},
        [{"type": "ExecutionStarted", "at_ms": base + 1000}],
    )
    succeeded = store.add(
        {
            "app": "shop",
            "status": "SUCCEEDED",
            "output": {"ok": True},
            "name": "order-8",
            "started_ms": base + 2000,
            "finished_ms": base + 2100,
        }
    )
    admins = store.add(
        {"app": "ops", "status": "SUCCEEDED", "started_ms": base + 3000, "finished_ms": base + 3001}
    )
    return Seeded(sand, failed, running, succeeded, admins)

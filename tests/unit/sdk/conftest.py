"""Helpers for the SDK tests: build application directories in a temporary folder; the
identity twin (``tests.unit.fake_sand``) and an environment of the test's own for the tests
of a client against it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

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

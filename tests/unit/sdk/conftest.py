"""Helpers for the SDK tests: build application directories in a temporary folder."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

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

"""The committed Python side of the IDL (sdk-python/src/sand_bus, sand_contracts) is exactly
what the Thrift compiler makes of local-bus/src/main/thrift today (decision 0036): an IDL
edit without a regeneration fails here, naming the command that fixes it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.unit.sdk.conftest import REPO

SRC = REPO / "sdk-python" / "src"
GENERATED = ("sand_bus", "sand_contracts")
FIX = "bash local-bus/gen-python.sh (then commit sdk-python/src/sand_bus and sand_contracts)"


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its relative path; caches are not sources."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_generatedPackages_matchTheIdl(tmp_path: Path) -> None:
    """Regenerating into a temporary directory gives the committed files, byte for byte."""
    thrift = os.environ.get("THRIFT", "/usr/bin/thrift")
    assert Path(thrift).is_file(), f"no Thrift compiler at {thrift}: `make setup` installs it"
    run = subprocess.run(
        ["sh", str(REPO / "local-bus" / "gen-python.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, f"local-bus/gen-python.sh failed:\n{run.stderr}"

    for package in GENERATED:
        fresh, committed = _files(tmp_path / package), _files(SRC / package)
        stale = sorted(
            name
            for name in fresh.keys() | committed.keys()
            if fresh.get(name) != committed.get(name)
        )
        assert not stale, f"sdk-python/src/{package} differs from the IDL in {stale}: run {FIX}"


def test_generatedPackages_importFromThisTree() -> None:
    """The tests exercise this tree's generated code, not an older copy on the path (a venv
    set up before decision 0036 still had local-bus/gen-py on it through a .pth file)."""
    import sand_bus
    import sand_contracts

    for module in (sand_bus, sand_contracts):
        assert module.__file__ is not None
        assert Path(module.__file__).resolve().parent.parent == SRC.resolve(), module.__file__

"""Runs every conformance case through the emulator: forked grains, real driver loop.

The emulator must end each execution exactly as the in-process driver does
(``test_conformance_engine.py``). Each case's definition becomes the ``main`` workflow
of a copy of the conformance app, which is then emulated with ``skip_waits``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from cases import APP_DIR, MOCK_CASE, Case, app_manifest, load_cases
from sand.emulator import emulate

CASES = load_cases()


@pytest.fixture(scope="module")
def app_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The conformance app with a workflows/ folder; each test writes its case as main."""
    root = tmp_path_factory.mktemp("conformance") / "app"
    shutil.copytree(APP_DIR, root)
    manifest = app_manifest()
    manifest["workflows"] = {"main": "workflows/main.yaml"}
    (root / "app.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / "workflows").mkdir(exist_ok=True)
    return root


@pytest.mark.timeout(20)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_conformsUnderEmulator(case: Case, app_copy: Path) -> None:
    """The emulated execution ends exactly as the case expects."""
    (app_copy / "workflows" / "main.yaml").write_text(case.definition_text())
    mocks = case.mock_file()
    result = emulate(
        app_copy,
        case.input,
        skip_waits=True,
        execution_id=f"conf-{case.id}",
        mocks=mocks,
        case=None if mocks is None else MOCK_CASE,
    )
    if result.ok:
        problems = case.mismatches(output=result.output)
    else:
        problems = case.mismatches(error=result.error, cause=result.cause)
    assert problems == [], case.description

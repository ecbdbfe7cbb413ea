"""Runs every conformance case through the engine with the in-process driver."""

from __future__ import annotations

import pytest
from cases import app_grains, app_manifest, load_cases
from sand_workflows import load_workflow_text
from sand_workflows.driver import run
from sand_workflows.engine import Failed

CASES = load_cases()
GRAINS = app_grains()
GRAIN_NAMES = set(app_manifest()["grains"])


def test_suite_is_large_enough() -> None:
    """The suite keeps at least 150 cases and every area has some."""
    assert len(CASES) >= 150
    areas = {c.id.split("/")[0] for c in CASES}
    assert {"pass", "task", "choice", "wait", "parallel", "map", "native"} <= areas


@pytest.mark.timeout(10)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_conforms(case) -> None:
    """The execution ends exactly as the case expects."""
    wf = load_workflow_text(case.definition_text(), source=f"{case.id}.yaml", grains=GRAIN_NAMES)
    result = run(wf, case.input, GRAINS, execution_id=f"conf-{case.id}")
    if isinstance(result, Failed):
        problems = case.mismatches(error=result.error, cause=result.cause)
    else:
        problems = case.mismatches(output=result.output)
    assert problems == [], case.description

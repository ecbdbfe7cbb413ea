"""Runs every conformance case through the engine with the in-process driver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from cases import MOCK_CASE, Case, app_grains, app_manifest, load_cases
from sand.mocks import MockedReturn, Mocker, load_mocks
from sand_workflows import Workflow, load_workflow_text
from sand_workflows.driver import Grain, run
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
    result = run(wf, case.input, grains_for(case, wf), execution_id=f"conf-{case.id}")
    if isinstance(result, Failed):
        problems = case.mismatches(error=result.error, cause=result.cause)
    else:
        problems = case.mismatches(output=result.output)
    assert problems == [], case.description


def grains_for(case: Case, wf: Workflow) -> Mapping[str, Grain]:
    """The app's grains, those the case mocks replaced by its canned answers (counted per
    key in call order: the driver calls grains one at a time, in the engine's order)."""
    mock_file = case.mock_file()
    if mock_file is None:
        return GRAINS
    mocker = Mocker(load_mocks(mock_file, {"main": wf}).case("main", MOCK_CASE))

    def mocked(name: str, real: Grain) -> Grain:
        def grain(event: Any, context: Any) -> Any:
            state = context.state.get("State", {}).get("Name")
            answer = mocker.answer(state, name)
            if answer is None:
                return real(event, context)
            outcome = answer[1]
            if isinstance(outcome, MockedReturn):
                return outcome.output
            # the driver names a failure by the exception's class: make one of that name
            raise type(outcome.error, (Exception,), {})(outcome.cause)

        return grain

    return {name: mocked(name, real) for name, real in GRAINS.items()}

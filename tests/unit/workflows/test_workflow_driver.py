"""The in-process test driver: grain calls, error mapping, timeouts, dynamic next."""

from __future__ import annotations

from typing import Any

import pytest
from sand_workflows import load_workflow_text
from sand_workflows.driver import GrainContext, run
from sand_workflows.engine import Failed, Finished, TimerCall


class Broken(Exception):
    pass


def test_exception_maps_to_class_name_and_message() -> None:
    """A grain exception fails the task with error = class name, cause = message."""
    wf = load_workflow_text("entry: g\ngrains: {g: {}}\n")

    def grain(event: Any, ctx: GrainContext) -> Any:
        raise Broken("it broke")

    assert run(wf, {}, {"g": grain}) == Failed("Broken", "it broke")


def test_missing_grain_is_task_failed() -> None:
    """A grain the driver does not know fails with States.TaskFailed."""
    wf = load_workflow_text("entry: g\ngrains: {g: {}}\n")
    result = run(wf, {}, {})
    assert isinstance(result, Failed) and result.error == "States.TaskFailed"


def test_context_offers_ids_and_add_next() -> None:
    """Grains see execution_id, grain_name and choose successors with add_next."""
    wf = load_workflow_text("entry: r\ngrains: {r: {potentialNext: [a, b]}, a: {}, b: {}}\n")
    seen: dict[str, Any] = {}

    def route(event: Any, ctx: GrainContext) -> Any:
        seen.update(id=ctx.execution_id, name=ctx.grain_name)
        ctx.add_next("b")
        return event

    result = run(
        wf, 1, {"r": route, "a": lambda e, c: "a", "b": lambda e, c: "b"}, execution_id="x9"
    )
    assert result == Finished("b")
    assert seen == {"id": "x9", "name": "r"}


@pytest.mark.timeout(5)
def test_timers_use_virtual_time_when_skipping_waits() -> None:
    """skip_waits: a one-hour Wait completes at once, and the TimerCall is observed."""
    wf = load_workflow_text(
        '{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}',
        source="w.json",
    )
    actions: list[Any] = []
    assert run(wf, {"a": 1}, {}, on_action=actions.append) == Finished({"a": 1})
    assert [a.delay_s for a in actions if isinstance(a, TimerCall)] == [3600]

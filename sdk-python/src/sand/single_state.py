"""Test one state of an app's workflow: ``sand test-state`` and :func:`test_state`.

Like AWS Step Functions' TestState API: the state runs alone with the input (and
variables) given, its Task answered by a mocked result or error or by the real grain,
and the result says what happened at each processing step and where the execution would
go next. The engine side is :mod:`sand_workflows.single_state`; the driver is the
emulator's (:func:`sand.emulator.run_emulation`): real grains run in forked processes, as
in ``sand emulate``, and the inner Tasks of a Map or Parallel state can be mocked with a
mock file (:mod:`sand.mocks`).

From pytest::

    from sand import test_state

    def test_resize_is_caught():
        result = test_state("examples/asl-orders", "Validate", {"items": []},
                            mock_error=("InvalidOrder", "no items"))
        assert result.status == "CAUGHT_ERROR" and result.next_state == "Rejected"
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from sand_workflows.actions import Failed, Finished
from sand_workflows.model import TaskState
from sand_workflows.single_state import (
    DEFAULT_EXECUTION_ID,
    SingleStateEngine,
    StateContext,
    StateTestError,
    StateTestResult,
    check_variables,
    inspect,
)

from sand.app import load_app
from sand.emulator import EmulationOptions, HistoryEvent, Mocks, mock_case, run_emulation
from sand.grain.pool import DEFAULT_GRACE_S
from sand.mocks import MockedEntry, MockedResponse, MockedReturn, MockedThrow, Mocker, TestCase

__all__ = ["StateTestError", "StateTestResult", "test_state"]

_UNSET: Final[Any] = object()
# The response name a --mock-result or --mock-error shows in the history (TaskStarted).
MOCK_RESPONSE: Final = "test-state"


def test_state(
    app_dir: str | Path,
    state: str,
    input: Any,
    workflow: str | None = None,
    *,
    mock_result: Any = _UNSET,
    mock_error: tuple[str, str] | None = None,
    variables: Mapping[str, Any] | None = None,
    mocks: Mocks | None = None,
    case: str | None = None,
    execution_id: str = DEFAULT_EXECUTION_ID,
    skip_waits: bool = True,
    trace: Callable[[HistoryEvent], None] | None = None,
) -> StateTestResult:
    """Run ``state`` of ``workflow`` (default: the app's default) alone on ``input``.

    ``mock_result`` (any JSON value) or ``mock_error`` (``(error, cause)``) answers the
    state's grain call without running it; only a Task state takes them. Without either,
    the grain runs for real. ``variables`` are the workflow variables visible at entry.
    ``mocks``/``case`` (a mock file and one of its test cases, :mod:`sand.mocks`) answer
    other calls, e.g. the inner Tasks of a Map. Waits and retry intervals inside a Map or
    Parallel fire at once unless ``skip_waits`` is False.

    Raises :class:`StateTestError` when the test cannot run (a native workflow, an unknown
    state, a mock for a state that is no Task, both mocks, non-JSON values),
    :class:`~sand.app.AppError` for an invalid app, :class:`~sand.mocks.MockError` for an
    unusable mock file.
    """
    _check_json("input", input)
    if mock_result is not _UNSET:
        _check_json("mock_result", mock_result)
    app = load_app(app_dir)
    spec = app.workflow(workflow)
    engine = SingleStateEngine(spec.definition, state)
    own = _own_mock(spec.definition.states[state], mock_result, mock_error)
    test_case = mock_case(app, spec.name, mocks, case)
    mocker = _mocker(spec.name, state, test_case, own)
    vars_ = dict(variables or {})
    check_variables(vars_)
    context = StateContext(execution_id=execution_id)
    result, recorder = run_emulation(
        app,
        spec,
        execution_id,
        input,
        options=EmulationOptions(
            skip_waits=skip_waits,
            max_concurrency=app.limits.max_concurrency,
            grace_s=DEFAULT_GRACE_S,
            trace=trace,
        ),
        mocker=mocker,
        engine=engine,
        begin=lambda: engine.start_state(input, vars_, context),
    )
    end: Finished | Failed = (
        Finished(result.output) if result.ok else Failed(result.error or "", result.cause or "")
    )
    return inspect(engine, end, list(result.steps), recorder.take_steps())


# Not a test function, whatever pytest takes names starting with "test" for.
test_state.__test__ = False  # type: ignore[attr-defined]


def _check_json(name: str, value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateTestError(f"{name} is not a JSON value: {exc}") from None


def _own_mock(
    st: Any, mock_result: Any, mock_error: tuple[str, str] | None
) -> MockedResponse | None:
    """The state's own mocked call (a mock_result or mock_error), or None."""
    if mock_result is _UNSET and mock_error is None:
        return None
    if mock_result is not _UNSET and mock_error is not None:
        raise StateTestError("give mock_result or mock_error, not both")
    if not isinstance(st, TaskState):
        kind = type(st).__name__.removesuffix("State")
        raise StateTestError(
            f"state '{st.name}' is a {kind} state: a mocked result or error is the result of"
            " a Task's grain (mock the inner Tasks of a Map or Parallel with a mock file)"
        )
    if mock_error is not None:
        error, cause = mock_error
        if not isinstance(error, str) or not error or not isinstance(cause, str):
            raise StateTestError(
                f"mock_error must be (error, cause), two strings and a non-empty error; got"
                f" {mock_error!r}"
            )
        outcome: MockedReturn | MockedThrow = MockedThrow(error, cause)
    else:
        outcome = MockedReturn(mock_result)
    return MockedResponse(MOCK_RESPONSE, (MockedEntry(0, 0, outcome),))


def _mocker(
    workflow: str, state: str, case: TestCase | None, own: MockedResponse | None
) -> Mocker | None:
    """A mocker of the case's responses, plus the state's own mock (which wins)."""
    if case is None and own is None:
        return None
    responses: dict[str, MockedResponse] = dict(case.responses) if case is not None else {}
    if own is not None:
        responses[state] = own
    name = case.name if case is not None else MOCK_RESPONSE
    return Mocker(TestCase(workflow, name, MappingProxyType(responses)))

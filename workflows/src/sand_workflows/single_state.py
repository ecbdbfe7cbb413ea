"""One-state testing (AWS Step Functions' TestState): run a single state and inspect it.

:class:`SingleStateEngine` is the ``Engine`` with one difference: it enters one state of
an ASL workflow (top-level or inside a branch: either way the start of a fresh thread, with
the given variables) and ends that thread at the first hand-over out of it — a ``Next`` or
Choice target, a Catch, a Retry, the end or a failure. Everything else is the engine's own
code, so a state behaves exactly as it does in an execution; the inner states of a
Parallel or Map run as usual (their Tasks run through whichever driver runs the engine).

To every driver the test looks like an execution: a hand-over ends it with ``Finished``
(the output handed over) and a Retry with ``Failed`` (the error it would retry), so the
emulator's loop and :func:`run_state` stop there. :func:`inspect` then reads what happened
from the history events (``history.Recorder``): the value after each processing step, the
status, the error and the next state.

Not thread-safe per test: one engine per test, driven by one loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from . import errors, history
from .actions import Action, AwaitCallback, Failed, Finished, TaskCall, TimerCall
from .dataflow import now_iso
from .engine import Engine
from .errors import StatesError
from .model import State, Workflow, WorkflowKind
from .steps import Done, Entry, Goto, Step
from .store import InMemoryStore
from .suggest import did_you_mean
from .tokens import Execution, Lineage, decode_token
from .variables import name_problem

DEFAULT_EXECUTION_ID: Final = "test-state"


class TestStatus(StrEnum):
    """How the state ended (AWS TestState's ``status`` values)."""

    __test__ = False  # not a pytest test class, whatever its name

    SUCCEEDED = "SUCCEEDED"  # it handed its output to its Next, or ended the thread
    FAILED = "FAILED"  # the error left the state (no Retry or Catch took it)
    RETRIABLE = "RETRIABLE"  # a Retrier would run the state again
    CAUGHT_ERROR = "CAUGHT_ERROR"  # a Catcher took the error to its Next


@dataclass(frozen=True, slots=True)
class StateContext:
    """The context object's execution part (``$$.Execution``) for the test:
    ``execution_input`` defaults to the state's input, ``start_time`` to now."""

    execution_id: str = DEFAULT_EXECUTION_ID
    execution_input: Any = None
    start_time: str | None = None


# Inspection keys, in processing order: history step name -> inspection field.
_STEP_FIELDS: Final = (
    ("input_path", "after_input_path"),
    ("parameters", "after_parameters"),
    ("arguments", "after_arguments"),
    ("result", "result"),
    ("result_selector", "after_result_selector"),
    ("result_path", "after_result_path"),
    ("output_path", "output"),
    ("output", "output"),
    ("variables", "variables"),
)
INSPECTION_FIELDS: Final = (
    "input",
    "after_input_path",
    "after_parameters",
    "after_arguments",
    "result",
    "after_result_selector",
    "after_result_path",
    "output",
    "variables",
)


@dataclass(frozen=True, slots=True)
class Inspection:
    """The value after each processing step that happened (AWS TestState's
    ``inspectionData``), in ``INSPECTION_FIELDS`` order: ``input`` (the state's raw
    input), ``after_input_path``, ``after_parameters`` (JSONPath) or ``after_arguments``
    (JSONata), ``result`` (the grain's, or each branch's/item's output), ``after_result_selector``,
    ``after_result_path``, ``output``, ``variables`` (all the visible variables after the
    Assign). A step that did not happen is absent from ``steps``."""

    steps: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.steps[name]

    def __contains__(self, name: object) -> bool:
        return name in self.steps

    def to_json(self) -> dict[str, Any]:
        return {name: self.steps[name] for name in INSPECTION_FIELDS if name in self.steps}


@dataclass(frozen=True, slots=True)
class StateTestResult:
    """What testing one state gave (AWS TestState's response): ``output`` when it
    succeeded or caught the error, ``error``/``cause`` when it failed, caught or would
    retry, ``next_state`` when it hands over to another state."""

    state: str
    status: TestStatus
    output: Any = None
    error: str | None = None
    cause: str | None = None
    next_state: str | None = None
    inspection: Inspection = field(default_factory=Inspection)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"state": self.state, "status": self.status.value}
        if self.status in (TestStatus.SUCCEEDED, TestStatus.CAUGHT_ERROR):
            document["output"] = self.output
        if self.error is not None:
            document["error"] = self.error
            document["cause"] = self.cause
        if self.next_state is not None:
            document["next_state"] = self.next_state
        document["inspection"] = self.inspection.to_json()
        return document


class StateTestError(ValueError):
    """The test cannot run: a native workflow, an unknown state, bad variables."""


@dataclass(frozen=True, slots=True)
class _HandOver:
    """Where the state's thread stopped."""

    status: TestStatus
    output: Any = None
    error: str | None = None
    cause: str | None = None
    next_state: str | None = None


class SingleStateEngine(Engine):
    """An ``Engine`` that runs state ``state`` alone (see the module docstring).

    Raises :class:`StateTestError` for a native workflow or a state it does not have.
    """

    def __init__(
        self,
        workflow: Workflow,
        state: str,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        check_state(workflow, state)
        super().__init__(workflow, InMemoryStore(), clock=clock)
        self.state = state
        self.stopped: _HandOver | None = None
        self.entry_steps: dict[str, Any] | None = None
        self._entered = False

    def start_state(
        self,
        input: Any,
        variables: Mapping[str, Any] | None = None,
        context: StateContext | None = None,
    ) -> list[Action]:
        """Enter the state with ``input`` and ``variables``; the actions for the driver
        (the engine's usual ones; the test ends with ``Finished`` or ``Failed``)."""
        context = context or StateContext()
        vars_ = dict(variables or {})
        check_variables(vars_)
        execution_input = input if context.execution_input is None else context.execution_input
        start_time = context.start_time or now_iso(self.clock)
        lin = Lineage(Execution(context.execution_id, execution_input, start_time), variables=vars_)
        return self.drive(Goto(self.state, input, lin))

    # -- the hand-over: the only place this engine differs --------------------------------
    def drive(self, step: Step) -> list[Action]:
        if isinstance(step, Goto):
            if not step.lineage.frames:
                if self._entered:
                    return self._hand_over(step).actions
                self._entered = True
            elif len(step.lineage.frames) == 1 and self.entry_steps is None:
                # The first branch or item of the state starts: what was noted so far is
                # the state's own entry processing (InputPath, Parameters, ItemSelector...).
                self.entry_steps = history.take_steps()
        return super().drive(step)

    def _enter(self, st: State, entry: Entry) -> Step:
        # Overridden (not public) because the engine's drive loop enters the Next of a
        # state without calling drive again: the hand-over must be caught here.
        return self._stop_at_hand_over(super()._enter(st, entry))

    def state_error(
        self, st: State, raw: Any, lin: Lineage, rc: tuple[int, ...], exc: StatesError
    ) -> Step:
        step = super().state_error(st, raw, lin, rc, exc)
        if lin.frames or self.stopped is not None:
            return step
        if isinstance(step, Done) and any(isinstance(a, TimerCall) for a in step.actions):
            # A Retrier of the state would run it again: the test stops here.
            self.stopped = _HandOver(TestStatus.RETRIABLE, error=exc.error, cause=exc.cause)
            return Done([Failed(exc.error, exc.cause)])
        if isinstance(step, Goto):
            self.stopped = _HandOver(
                TestStatus.CAUGHT_ERROR,
                output=step.input,
                error=exc.error,
                cause=exc.cause,
                next_state=step.state,
            )
            return Done([Finished(step.input)])
        return step

    def _stop_at_hand_over(self, step: Step) -> Step:
        if isinstance(step, Goto) and not step.lineage.frames:
            return self._hand_over(step)
        return step

    def _hand_over(self, step: Goto) -> Done:
        if self.stopped is None:
            self.stopped = _HandOver(TestStatus.SUCCEEDED, output=step.input, next_state=step.state)
        return Done([Finished(step.input)])

    def outcome(self, end: Finished | Failed) -> _HandOver:
        """How the test ended, given the action that ended it for the driver."""
        if self.stopped is not None:
            return self.stopped
        if isinstance(end, Finished):
            return _HandOver(TestStatus.SUCCEEDED, output=end.output)
        return _HandOver(TestStatus.FAILED, error=end.error, cause=end.cause)


def check_state(workflow: Workflow, state: str) -> None:
    """Raise :class:`StateTestError` unless ``state`` is a state of ASL ``workflow``."""
    if workflow.kind == WorkflowKind.NATIVE:
        raise StateTestError(
            f"workflow '{workflow.name}' is in the native format: one-state testing runs ASL"
            " states only (emulate the workflow with mocks instead)"
        )
    if state not in workflow.states:
        names = ", ".join(sorted(workflow.states))
        raise StateTestError(
            f"workflow '{workflow.name}' has no state '{state}' (its states: {names})"
            + did_you_mean(state, workflow.states)
        )


def check_variables(variables: Mapping[str, Any]) -> None:
    """Raise :class:`StateTestError` for a variable name that breaks the naming rule or a
    value that is not JSON."""
    for name, value in variables.items():
        problem = name_problem(name)
        if problem is not None:
            raise StateTestError(f"variables: {problem}")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise StateTestError(f"variables: '{name}' is not a JSON value: {exc}") from None


def inspect(
    engine: SingleStateEngine,
    end: Finished | Failed,
    events: list[dict[str, Any]],
    left_over: Mapping[str, Any],
) -> StateTestResult:
    """The result of the test ``engine`` ran, from the history ``events`` it recorded and
    the processing steps noted but never attached to an event (``left_over``: those of a
    state whose processing failed)."""
    outcome = engine.outcome(end)
    mine = [e for e in events if e.get("state") == engine.state and not e.get("path")]
    steps: dict[str, Any] = {}
    for event in mine:
        if event["type"] == "StateEntered":
            steps["input"] = event.get("input")
    for source in (engine.entry_steps or {}, *_event_steps(mine), left_over):
        for step_name, field_name in _STEP_FIELDS:
            if step_name in source:
                steps[field_name] = source[step_name]
    for event in mine:
        if event["type"] == "StateExited":
            steps["output"] = event.get("output")  # also when no step changed it
    if "result" not in steps:
        branch_outputs = _branch_outputs(engine.state, events)
        if branch_outputs is not None:
            steps["result"] = branch_outputs
    return StateTestResult(
        state=engine.state,
        status=outcome.status,
        output=outcome.output,
        error=outcome.error,
        cause=outcome.cause,
        next_state=outcome.next_state,
        inspection=Inspection(steps),
    )


def _event_steps(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["steps"] for e in events if isinstance(e.get("steps"), dict)]


def _branch_outputs(state: str, events: list[dict[str, Any]]) -> list[Any] | None:
    """The outputs of the branches (Parallel) or items (Map) of ``state``, by index, when
    every one succeeded (the result the state's ResultSelector sees)."""
    outputs: dict[int, Any] = {}
    started = None
    for event in events:
        if event.get("state") == state and event["type"] in ("ParallelStarted", "MapStarted"):
            started = event.get("branches", event.get("items"))
        path = str(event.get("path") or "")
        if event["type"] == "BranchSucceeded" and path.startswith(f"{state}[") and "/" not in path:
            outputs[int(path[len(state) + 1 : -1])] = event.get("output")
    if started is None or len(outputs) != started:
        return None
    return [outputs[i] for i in range(started)]


def run_state(
    workflow: Workflow,
    state: str,
    input: Any,
    *,
    variables: Mapping[str, Any] | None = None,
    context: StateContext | None = None,
    answer: Callable[[TaskCall], Any] | None = None,
    max_actions: int = 10_000,
) -> StateTestResult:
    """Test ``state`` of ``workflow`` in this process (no grain is forked; timers fire at
    once). ``answer(call)`` gives the output of each task call or raises
    :class:`~sand_workflows.errors.StatesError` to fail it; without it every call fails
    with States.TaskFailed ("no grain runs in-process"). The SDK's ``sand.test_state``
    runs real grains instead, through the emulator.

    Raises :class:`StateTestError` when the test cannot run.
    """
    engine = SingleStateEngine(workflow, state)
    recorder = history.Recorder(host="test-state")
    with history.recording(recorder):
        queue: list[Action] = list(engine.start_state(input, variables, context))
        handled = 0
        while queue:
            handled += 1
            if handled > max_actions:
                raise StateTestError(f"state '{state}' did not end after {max_actions} actions")
            action = queue.pop(0)
            if isinstance(action, Finished | Failed):
                return inspect(engine, action, recorder.events, recorder.take_steps())
            if isinstance(action, TimerCall):
                queue += engine.timer_fired(action.token)
                continue
            if isinstance(action, AwaitCallback):
                raise StateTestError(f"state '{state}' waits for a callback: {action!r}")
            history.emit_for_token("TaskStarted", action.token, grain=action.grain)
            queue += _answer(engine, action, answer)
    raise StateTestError(f"state '{state}' stopped without handing over (no work left)")


def _answer(
    engine: Engine, call: TaskCall, answer: Callable[[TaskCall], Any] | None
) -> list[Action]:
    if answer is None:
        return engine.task_failed(
            call.token, errors.TASK_FAILED, f"no grain runs in-process: '{call.grain}'"
        )
    # A callback task's answer is the outcome sent with its token (its grain does not run,
    # as a mocked callback in Step Functions' TestState).
    callback = decode_token(call.token).callback is not None
    try:
        output = answer(call)
    except StatesError as exc:
        if callback:
            return engine.callback_ended(call.token, {"error": exc.error, "cause": exc.cause})
        return engine.task_failed(call.token, exc.error, exc.cause)
    if callback:
        return engine.callback_ended(call.token, {"output": output})
    return engine.task_succeeded(call.token, output)

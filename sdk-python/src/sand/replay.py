"""Replay an execution of the cluster on this machine: ``sand replay``.

The cluster recorded every step of the execution (decision 0018): each task's input and what
its grain answered. A replay runs the workflow of the *local* app under the emulator on the
recorded input, answering every task with what it answered on the cluster — call by call, per
state and branch path (``Fan[1]/Price``), in order, retries included — except the grains named
to run here (their code runs for real, so a breakpoint in them stops), and then says where the
local run first differs from the recorded one: a fixed grain, a changed workflow, a data-flow
field that reads differently. A task that never ended on the cluster (the execution was stopped
while it ran) runs here too.

A redriven execution is replayed as its first run (its later runs started from a state: give
that state with ``from_state`` to start there, with the input and variables it had then).

The recorded values must be whole: an input or a task result recorded truncated (over 32 KiB)
cannot stand in, and the replay refuses, naming the state (run its grain here instead).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sand_workflows import history
from sand_workflows.engine import (
    AwaitCallback,
    Engine,
    InMemoryStore,
    Redrive,
    TaskCall,
    TaskTokenMinter,
)
from sand_workflows.model import TaskState, WorkflowKind
from sand_workflows.tokens import decode_token

from sand.app import load_app
from sand.emulator import EmulationOptions, EmulationResult, run_emulation
from sand.mocks import MockedReturn, MockedThrow, MockOutcome, callback_outcome
from sand.suggest import did_you_mean

# What a task answered on the cluster (its end event), in the emulator's mock terms.
_ENDS = ("TaskSucceeded", "TaskFailed", "TaskTimedOut")
# The events compared between the recorded run and the local one, with the fields compared:
# what the workflow did, not where or when (hosts, pids, times and task tokens differ).
_COMPARED: Mapping[str, tuple[str, ...]] = {
    "StateEntered": ("input",),
    "StateExited": ("output", "next"),
    "TaskScheduled": ("input",),
    "TaskSucceeded": ("output",),
    "TaskFailed": ("error", "cause"),
    "TaskTimedOut": ("error",),
    "RetryScheduled": ("error",),
    "Caught": ("error", "next"),
    "StateFailed": ("error", "cause"),
    "WaitStarted": ("seconds",),
    "BranchSucceeded": ("output",),
    "BranchFailed": ("error", "cause"),
}
_ENDED = ("ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted")
RECORDED = "recorded"  # the response name a replayed call shows in --trace


class ReplayError(Exception):
    """The execution cannot be replayed here; the message says why and what to do."""


Key = tuple[str, str]  # (branch path, state)


@dataclass(frozen=True, slots=True)
class Recording:
    """What the cluster recorded of one execution's first run."""

    execution_id: str
    app: str
    workflow: str
    input: Any
    events: tuple[Mapping[str, Any], ...]
    # per (path, state): what each call of its task answered, in order; None: it never ended
    calls: Mapping[Key, tuple[MockOutcome | None, ...]]

    @classmethod
    def of(
        cls, document: Mapping[str, Any], events: Sequence[Mapping[str, Any]], *, truncated: bool
    ) -> Recording:
        """The recording of the execution ``document`` (``GET /v1/executions/{id}``) from its
        history ``events``; ``truncated``: the history hit its cap (refused)."""
        execution_id = str(document.get("execution_id", ""))
        if truncated:
            raise ReplayError(
                f"execution '{execution_id}' has more history events than were recorded (the"
                " history was truncated at its cap): it cannot be replayed"
            )
        first = _first_run(events)
        started = next((e for e in first if e.get("type") == "ExecutionStarted"), None)
        if started is None:
            raise ReplayError(
                f"execution '{execution_id}' has no recorded ExecutionStarted event (its history"
                " is recorded asynchronously: try again in a moment)"
            )
        _whole(started.get("input"), "the execution's input")
        return cls(
            execution_id=execution_id,
            app=str(document.get("app", "")),
            workflow=str(started.get("workflow") or document.get("workflow") or ""),
            input=started.get("input"),
            events=first,
            calls=_calls(first),
        )

    def entered(self, state: str) -> Mapping[str, Any]:
        """The first StateEntered event of the top-level ``state``."""
        for event in self.events:
            entered = event.get("type") == "StateEntered" and event.get("state") == state
            if entered and not event.get("path"):
                return event
        raise ReplayError(f"state '{state}' was not entered at the top level in the recorded run")

    def ended(self) -> Mapping[str, Any] | None:
        """How the recorded run ended (ExecutionSucceeded/Failed/Aborted), None if it did not."""
        return next((e for e in self.events if e.get("type") in _ENDED), None)


class RecordedAnswers:
    """Answers each task call of the local run with the recorded answer of the same call (same
    path and state, same rank among that state's calls there), unless its grain runs here or
    nothing was recorded for it. Records which calls ran here and why."""

    def __init__(self, recording: Recording, run_here: Collection[str]) -> None:
        self._calls = recording.calls
        self._run_here = frozenset(run_here)
        self._seen: dict[Key, int] = defaultdict(int)
        self.ran_here: list[str] = []

    def answer_call(self, call: TaskCall) -> tuple[str, MockOutcome] | None:
        token = decode_token(call.token)
        key = (history.path_of(token.lineage), token.state)
        rank = self._seen[key]
        self._seen[key] = rank + 1
        where = _where(key)
        if call.grain in self._run_here:
            self.ran_here.append(f"{where} (grain '{call.grain}' runs here, as asked)")
            return None
        recorded = self._calls.get(key, ())
        outcome = recorded[rank] if rank < len(recorded) else None
        if outcome is None:
            why = "it never ended on the cluster" if rank < len(recorded) else "not on record"
            self.ran_here.append(f"{where} call {rank + 1} (grain '{call.grain}': {why})")
            return None
        return RECORDED, outcome

    def answer_wait(self, wait: AwaitCallback) -> dict[str, Any] | None:
        """A callback task whose grain ran here waits for what was sent on the cluster."""
        token = decode_token(wait.token)
        key = (history.path_of(token.lineage), token.state)
        recorded = self._calls.get(key, ())
        rank = self._seen[key] - 1  # the call whose grain just returned
        outcome = recorded[rank] if 0 <= rank < len(recorded) else None
        return None if outcome is None else callback_outcome(outcome)


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place the two runs part: the event of each at that place (None: none)."""

    path: str
    state: str
    rank: int  # among the compared events of that state and path
    recorded: Mapping[str, Any] | None
    local: Mapping[str, Any] | None

    def describe(self) -> str:
        where = _where((self.path, self.state))
        return (
            f"first difference at {where}, its event {self.rank + 1}:\n"
            f"  recorded: {_shown(self.recorded)}\n"
            f"  local:    {_shown(self.local)}"
        )


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """The local run, what it was compared with, and where it first differs (None: nowhere)."""

    recording: Recording
    local: EmulationResult
    difference: Difference | None
    ran_here: tuple[str, ...] = field(default_factory=tuple)
    compared: int = 0


def replay(
    app_dir: str | Path,
    recording: Recording,
    *,
    from_state: str | None = None,
    grains: Collection[str] = (),
    skip_waits: bool = True,
    trace: Callable[[Mapping[str, Any]], None] | None = None,
) -> ReplayResult:
    """Run ``recording``'s workflow of the app in ``app_dir`` here, answered as recorded
    except for ``grains``; from the top-level ``from_state`` when given (with the input and
    variables it was entered with). Raises ReplayError when it cannot run here."""
    app = load_app(app_dir)
    if recording.app and app.name != recording.app:
        raise ReplayError(
            f"the execution is of app '{recording.app}', but {app_dir} holds app '{app.name}'"
        )
    if recording.workflow not in app.workflows:
        known = ", ".join(sorted(app.workflows))
        raise ReplayError(
            f"the local app has no workflow '{recording.workflow}' (it has: {known})"
            + did_you_mean(recording.workflow, app.workflows)
        )
    spec = app.workflow(recording.workflow)
    if spec.definition.kind == WorkflowKind.NATIVE:
        raise ReplayError("only ASL workflows can be replayed (this one is in the native format)")
    unknown = sorted(set(grains) - set(app.grains))
    if unknown:
        raise ReplayError(
            f"--grain {unknown[0]}: the app has no such grain"
            + did_you_mean(unknown[0], app.grains)
        )
    _check_answers(recording, spec.definition.states, grains)
    engine = Engine(spec.definition, InMemoryStore(), task_tokens=TaskTokenMinter.local(app.name))
    begin = None if from_state is None else _begin_at(engine, recording, from_state)
    answers = RecordedAnswers(recording, grains)
    options = EmulationOptions(
        skip_waits=skip_waits,
        max_concurrency=app.limits.max_concurrency,
        grace_s=1.0,
        trace=trace,
    )
    local, _ = run_emulation(
        app,
        spec,
        f"replay-{uuid.uuid4().hex[:12]}",
        recording.input,
        options=options,
        mocker=answers,
        engine=engine,
        begin=begin,
    )
    recorded = recording.events
    if from_state is not None:
        recorded = _from(recorded, recording.entered(from_state))
    difference, compared = first_difference(recorded, local.steps)
    return ReplayResult(recording, local, difference, tuple(answers.ran_here), compared)


def first_difference(
    recorded: Sequence[Mapping[str, Any]], local: Sequence[Mapping[str, Any]]
) -> tuple[Difference | None, int]:
    """Where ``local`` first parts from ``recorded`` (each state's events per branch path are
    compared in order; branches may interleave differently), and how many events matched."""
    theirs = _by_key(recorded)
    ours = _by_key(local)
    seen: dict[Key, int] = defaultdict(int)
    compared = 0
    for event in recorded:
        key = _key(event)
        if key is None:
            continue
        rank = seen[key]
        seen[key] = rank + 1
        mine = ours.get(key, [])
        other = mine[rank] if rank < len(mine) else None
        if other is None or not _same(event, other):
            return Difference(key[0], key[1], rank, event, other), compared
        compared += 1
    for event in local:  # what only the local run did
        key = _key(event)
        if key is not None and len(ours[key]) > len(theirs.get(key, [])):
            rank = len(theirs.get(key, []))
            return Difference(key[0], key[1], rank, None, ours[key][rank]), compared
    return None, compared


# -- the recording -------------------------------------------------------------------------------


def _first_run(events: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    run = []
    for event in events:
        if event.get("type") == "ExecutionRedriven":
            break
        run.append(event)
    return tuple(run)


def _calls(events: Sequence[Mapping[str, Any]]) -> dict[Key, tuple[MockOutcome | None, ...]]:
    """Each state's task calls per path, in the order they were scheduled, with their end."""
    calls: dict[Key, list[MockOutcome | None]] = defaultdict(list)
    for event in events:
        key = _key(event)
        if key is None:
            continue
        if event["type"] == "TaskScheduled":
            calls[key].append(None)
        elif event["type"] in _ENDS and calls[key] and calls[key][-1] is None:
            calls[key][-1] = _outcome(event)
    return {key: tuple(outcomes) for key, outcomes in calls.items()}


def _outcome(event: Mapping[str, Any]) -> MockOutcome:
    if event["type"] == "TaskSucceeded":
        return MockedReturn(event.get("output"))
    return MockedThrow(str(event.get("error") or ""), str(event.get("cause") or ""))


def _check_answers(
    recording: Recording, states: Mapping[str, Any], grains: Collection[str]
) -> None:
    """Refuse before running when a recorded answer that stands in for a grain not run here
    was recorded truncated."""
    for (path, state), outcomes in recording.calls.items():
        st = states.get(state)
        if isinstance(st, TaskState) and st.resource in grains:
            continue
        for outcome in outcomes:
            if isinstance(outcome, MockedReturn):
                _whole(outcome.output, f"the recorded result of {_where((path, state))}", st)


def _whole(value: Any, what: str, state: Any = None) -> None:
    if isinstance(value, dict) and value.get("truncated") is True and "preview" in value:
        hint = (
            f": run grain '{state.resource}' here with --grain {state.resource}"
            if isinstance(state, TaskState)
            else ""
        )
        raise ReplayError(
            f"{what} was recorded truncated ({value.get('bytes')} bytes over the history's"
            f" limit) and cannot stand in for it{hint}"
        )


def _begin_at(engine: Engine, recording: Recording, state: str) -> Callable[[], list[Any]]:
    if state not in engine.wf.top_level:
        raise ReplayError(
            f"--from {state}: not a top-level state of workflow '{recording.workflow}'"
            + did_you_mean(state, engine.wf.top_level)
        )
    entered = recording.entered(state)
    _whole(entered.get("input"), f"the recorded input of state '{state}'")
    variables = dict(entered.get("variables") or {})
    redrive = Redrive(state, entered.get("input"), 1, variables)

    def begin() -> list[Any]:
        return engine.start(recording.execution_id, recording.input, redrive=redrive)

    return begin


def _from(
    events: Sequence[Mapping[str, Any]], entered: Mapping[str, Any]
) -> tuple[Mapping[str, Any], ...]:
    """The recorded events from ``entered`` on."""
    index = next(i for i, e in enumerate(events) if e is entered)
    return tuple(events[index:])


# -- comparing -------------------------------------------------------------------------------------


def _key(event: Mapping[str, Any]) -> Key | None:
    state = event.get("state")
    if state is None or event.get("type") not in _COMPARED:
        return None
    return (str(event.get("path") or ""), str(state))


def _by_key(events: Sequence[Mapping[str, Any]]) -> dict[Key, list[Mapping[str, Any]]]:
    grouped: dict[Key, list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        key = _key(event)
        if key is not None:
            grouped[key].append(event)
    return grouped


def _same(recorded: Mapping[str, Any], local: Mapping[str, Any]) -> bool:
    """The same event, as far as the workflow goes (a value recorded cut short, over the
    history's limit, matches whatever it was)."""
    kind = recorded.get("type")
    if local.get("type") != kind:
        return False
    for name in _COMPARED[str(kind)]:
        theirs = recorded.get(name)
        if isinstance(theirs, dict) and theirs.get("truncated") is True and "preview" in theirs:
            continue
        if theirs != local.get(name):
            return False
    return True


def _where(key: Key) -> str:
    path, state = key
    return f"{path}/{state}" if path else state


def _shown(event: Mapping[str, Any] | None) -> str:
    if event is None:
        return "(no such event)"
    kind = str(event.get("type"))
    fields = ", ".join(f"{name} {event.get(name)!r}" for name in _COMPARED.get(kind, ()))
    return f"{kind}: {fields}" if fields else kind

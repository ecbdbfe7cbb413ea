"""The internal graph both formats compile into. Immutable; built only by the loaders.

One frozen record per kind of state; the engine dispatches on the class. The hierarchy
follows the field tables of the States Language spec ("Common State Fields")::

    State                     name, location
    ├── GrainState            a SAND native grain
    ├── FailState             Error/Cause (no InputPath/OutputPath)
    └── FilterState           InputPath, OutputPath
        ├── ChoiceState
        ├── SucceedState
        └── FlowState         Next / End
            ├── WaitState
            ├── PassState     Parameters, ResultPath, Result
            └── RecoverableState   ResultPath, ResultSelector, Retry, Catch
                ├── TaskState
                ├── ParallelState
                └── MapState

Path fields hold a compiled Path, or ``None`` when the definition sets them to JSON
``null``; an absent field holds its default (``$``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .choice import Rule
from .jsonata_lang import Template
from .paths import Path, compile_path

ROOT = compile_path("$")


class WorkflowKind(StrEnum):
    """The format a workflow was written in (equal to the strings ``"asl"``/``"native"``)."""

    ASL = "asl"
    NATIVE = "native"


@dataclass(frozen=True, slots=True)
class Retrier:
    error_equals: tuple[str, ...]
    interval_s: float = 1.0
    max_attempts: int = 3
    backoff_rate: float = 2.0
    max_delay_s: float | None = None
    jitter: str | None = None


@dataclass(frozen=True, slots=True)
class Catcher:
    """A Catcher. ``assign`` holds its Assign (a JSONPath Payload Template, or a JSONata
    Template in a JSONata state); ``output`` is a JSONata Catcher's Output."""

    error_equals: tuple[str, ...]
    next: str
    result_path: Path | None = ROOT  # None = JSON null (discard the error output)
    assign: Any = None
    output: Template | None = None


@dataclass(frozen=True, slots=True)
class ChoiceRule:
    """A top-level Choice Rule: ``rule`` (JSONPath) or ``condition`` (JSONata) decides;
    ``assign`` and ``output`` apply when it sends the execution to ``next``."""

    next: str
    rule: Rule | None = None
    condition: Template | None = None
    assign: Any = None
    output: Template | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    """One node of the graph. ``location`` is where the definition declares it
    (``States.P.Branches[0].States.A``, ``grains.merge``)."""

    name: str
    location: str
    # JSONata is this state's query language (QueryLanguage, its own or the machine's).
    jsonata: bool = False
    # Assign: a Payload Template (JSONPath) or a Template (JSONata); None when absent.
    assign: Any = None
    # Output of a JSONata state; None when absent (the state's default output).
    output: Template | None = None

    def targets(self) -> tuple[str, ...]:
        """The states this one can hand over to (Next, Choice targets, Default, Catch)."""
        return ()

    @property
    def terminal(self) -> bool:
        """Whether an execution (or branch) can end in this state."""
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class GrainState(State):
    """A grain of a SAND native workflow.

    ``next_grains`` (static fan-out) and ``potential_next`` (the grain picks at run time)
    exclude each other. A ``join`` runs once with the outputs of its ``predecessors``
    (sorted by name). ``timeout_s`` is ``timeoutSeconds``, None for the runner's default.
    """

    next_grains: tuple[str, ...] = ()
    potential_next: tuple[str, ...] = ()
    join: bool = False
    predecessors: tuple[str, ...] = ()
    timeout_s: float | None = None

    def targets(self) -> tuple[str, ...]:
        return self.next_grains + self.potential_next

    @property
    def terminal(self) -> bool:
        return not self.next_grains


@dataclass(frozen=True, slots=True, kw_only=True)
class FailState(State):
    """Ends the execution (or branch) with an error: literal ``error``/``cause``, or a
    reference path / intrinsic in ``error_expr``/``cause_expr`` (ErrorPath, CausePath), or
    a JSONata Template in ``error_template``/``cause_template``."""

    error: str | None = None
    cause: str | None = None
    error_expr: str | None = None
    cause_expr: str | None = None
    error_template: Template | None = None
    cause_template: Template | None = None

    @property
    def terminal(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterState(State):
    """A state with InputPath and OutputPath (every ASL state but Fail)."""

    input_path: Path | None = ROOT
    output_path: Path | None = ROOT


@dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceState(FilterState):
    """Goes to the ``Next`` of the first matching rule, else ``default`` (the state's own
    Assign and Output apply only then; a matching rule's apply otherwise)."""

    choices: tuple[ChoiceRule, ...] = ()
    default: str | None = None

    def targets(self) -> tuple[str, ...]:
        found = tuple(choice.next for choice in self.choices)
        return found + ((self.default,) if self.default else ())


@dataclass(frozen=True, slots=True, kw_only=True)
class SucceedState(FilterState):
    """Ends the execution (or branch) with its filtered input."""

    @property
    def terminal(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowState(FilterState):
    """A state that continues with ``next`` or ends with ``end`` (exactly one is set)."""

    next: str | None = None
    end: bool = False

    def targets(self) -> tuple[str, ...]:
        return (self.next,) if self.next else ()

    @property
    def terminal(self) -> bool:
        return self.end


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitState(FlowState):
    """Waits for exactly one of: ``seconds``, ``seconds_path``, ``timestamp``,
    ``timestamp_path``, or (JSONata) ``seconds_template``, ``timestamp_template``."""

    seconds: float | None = None
    seconds_path: Path | None = None
    timestamp: str | None = None
    timestamp_path: Path | None = None
    seconds_template: Template | None = None
    timestamp_template: Template | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PassState(FlowState):
    """Passes its input (or ``result`` when ``has_result``) to ResultPath."""

    parameters: dict[str, Any] | None = None
    result_path: Path | None = ROOT
    has_result: bool = False
    result: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoverableState(FlowState):
    """A state that produces a result and may fail: ResultSelector, ResultPath, Retry, Catch."""

    result_selector: dict[str, Any] | None = None
    result_path: Path | None = ROOT
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()

    def targets(self) -> tuple[str, ...]:
        return FlowState.targets(self) + tuple(c.next for c in self.catch)

    @property
    def needs_raw_input(self) -> bool:
        """Whether finishing this state needs its raw input (ResultPath, Catch or Retry use
        it, or JSONata's $states.input)."""
        if self.jsonata:
            return True
        if self.retry or (self.result_path is not None and self.result_path.steps != ()):
            return True
        if self.result_path is None:
            return True
        return any(c.result_path is None or c.result_path.steps != () for c in self.catch)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskState(RecoverableState):
    """Runs grain ``resource``. ``timeout_s`` is TimeoutSeconds (default 60), None when
    ``timeout_path`` (TimeoutSecondsPath) or ``timeout_template`` (JSONata) gives it at
    run time. ``arguments`` is a JSONata state's Arguments.

    ``callback``: the Resource ended in ``.waitForTaskToken`` (decision 0033): the grain gets
    a task token in ``$$.Task.Token`` and the task ends when someone sends its outcome with
    that token, or its TimeoutSeconds (from the state's entry) or HeartbeatSeconds (between
    heartbeats) run out. ``heartbeat_s`` / ``heartbeat_path`` / ``heartbeat_template`` give
    HeartbeatSeconds the same three ways as the timeout; all None: no heartbeat needed."""

    resource: str
    parameters: dict[str, Any] | None = None
    timeout_s: float | None = None
    timeout_path: Path | None = None
    timeout_template: Template | None = None
    arguments: Template | None = None
    callback: bool = False
    heartbeat_s: float | None = None
    heartbeat_path: Path | None = None
    heartbeat_template: Template | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelState(RecoverableState):
    """Runs every branch on the effective input; ``branches`` holds each StartAt."""

    parameters: dict[str, Any] | None = None
    branches: tuple[str, ...] = ()
    arguments: Template | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MapState(RecoverableState):
    """Runs ``processor`` (the ItemProcessor's StartAt) once per item of ``items_path``.

    ``item_selector`` is ItemSelector (or the legacy Parameters); ``max_concurrency`` 0
    means unbounded. A JSONata Map has ``items`` (Items), ``item_template``
    (ItemSelector) and ``max_concurrency_template`` instead of the paths.
    """

    processor: str | None = None
    items_path: Path = ROOT
    item_selector: dict[str, Any] | None = None
    max_concurrency: int = 0
    max_concurrency_path: Path | None = None
    items: Template | None = None
    item_template: Template | None = None
    max_concurrency_template: Template | None = None


@dataclass(frozen=True)
class Workflow:
    """A validated workflow.

    ``states`` holds every state of the machine, nested branches included (names are
    unique across the machine, spec "States"). For native workflows each grain is a
    ``GrainState``; ``exit`` is the optional exit grain and ``concurrent`` tells whether
    any grain fans out.
    """

    source: str
    name: str
    kind: WorkflowKind
    start_at: str
    states: dict[str, State]
    exit: str | None = None
    concurrent: bool = False
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def top_level(self) -> frozenset[str]:
        """The states of the machine's own ``States`` (not inside a Parallel or Map)."""
        if self.kind != WorkflowKind.ASL:
            return frozenset(self.states)
        return frozenset(self.definition.get("States", {}))

"""The internal graph both formats compile into. Immutable; built only by ``loader``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .choice import Rule
from .paths import Path, compile_path

ROOT = compile_path("$")


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
    error_equals: tuple[str, ...]
    next: str
    result_path: Path | None = ROOT  # None = JSON null (discard the error output)


@dataclass(frozen=True, slots=True)
class State:
    """One node of the graph: an ASL state or a native grain (``type == "Grain"``).

    Path fields hold a compiled Path, or ``None`` when the definition sets them to JSON
    ``null``; an absent field holds its default (``$``).
    """

    name: str
    type: str
    location: str
    next: str | None = None
    end: bool = False
    input_path: Path | None = ROOT
    output_path: Path | None = ROOT
    result_path: Path | None = ROOT
    parameters: dict[str, Any] | None = None
    result_selector: dict[str, Any] | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    # Task
    resource: str | None = None
    timeout_s: float | None = None
    timeout_path: Path | None = None
    # Pass
    has_result: bool = False
    result: Any = None
    # Choice
    choices: tuple[tuple[Rule, str], ...] = ()
    default: str | None = None
    # Wait
    seconds: float | None = None
    seconds_path: Path | None = None
    timestamp: str | None = None
    timestamp_path: Path | None = None
    # Fail: literal, or a reference path / intrinsic in the *_expr fields
    error: str | None = None
    cause: str | None = None
    error_expr: str | None = None
    cause_expr: str | None = None
    # Parallel: the StartAt of each branch
    branches: tuple[str, ...] = ()
    # Map
    items_path: Path = ROOT
    item_selector: dict[str, Any] | None = None
    processor: str | None = None
    max_concurrency: int = 0
    max_concurrency_path: Path | None = None
    # Native grain
    next_grains: tuple[str, ...] = ()
    potential_next: tuple[str, ...] = ()
    join: bool = False
    predecessors: tuple[str, ...] = ()

    @property
    def needs_raw_input(self) -> bool:
        """Whether finishing this Task needs its raw input (ResultPath, Catch or Retry use it)."""
        if self.retry or (self.result_path is not None and self.result_path.steps != ()):
            return True
        if self.result_path is None:
            return True
        return any(c.result_path is None or c.result_path.steps != () for c in self.catch)


@dataclass(frozen=True)
class Workflow:
    """A validated workflow: ``kind`` is ``"asl"`` or ``"native"``.

    ``states`` holds every state of the machine, nested branches included (names are
    unique across the machine, spec "States"). For native workflows each grain is a state
    of type ``Grain``; ``exit`` is the optional exit grain.
    """

    source: str
    name: str
    kind: str
    start_at: str
    states: dict[str, State]
    exit: str | None = None
    concurrent: bool = False
    definition: dict[str, Any] = field(default_factory=dict, repr=False)

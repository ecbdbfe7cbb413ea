"""What entering a state leads to: another state to enter now, or actions for the driver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .actions import Action
from .tokens import Lineage

if TYPE_CHECKING:
    from .dataflow import ContextObject


@dataclass(frozen=True, slots=True)
class Goto:
    """Enter ``state`` with ``input`` (its raw input) without outside work."""

    state: str
    input: Any
    lineage: Lineage
    retry_counts: tuple[int, ...] = ()  # attempts so far when re-entered by a Retrier
    # A redrive's entry into a Parallel/Map: the outputs of its branches or items that
    # succeeded before, per slot; they are kept, not run again.
    kept: Mapping[int, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Done:
    """This thread of the execution waits for outside work (or ended): ``actions``."""

    actions: list[Action] = field(default_factory=list)


Step = Goto | Done


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry into a state: what its processing and its continuation tokens need."""

    raw_input: Any  # the state's input before InputPath
    lineage: Lineage  # already counting this entry
    retry_counts: tuple[int, ...]  # attempts so far per Retrier (empty: first attempt)
    context: ContextObject  # the context object $$ (and the variables at entry)
    entered_time: str  # $$.State.EnteredTime
    kept: Mapping[int, Any] = field(default_factory=dict)  # ``Goto.kept``

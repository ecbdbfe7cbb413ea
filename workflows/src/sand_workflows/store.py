"""Shared state of fan-outs: Parallel branches, Map iterations and native joins.

The engine keeps everything else in tokens. A *group* is one run of a Parallel or Map
state (or one native join, or a native execution's end guard). It has ``size`` slots,
an opaque ``parent`` string (the JSON continuation of the state that opened it), a
status (open, completed, closed) and, for Map concurrency, a claim cursor.

Implementations must make every method atomic with respect to every other call on the
same group id, from any process (the Redis implementation runs each method as one Lua
script). Group ids are built by the engine and are deterministic: replaying the same
event produces the same id, so all methods must be idempotent as described.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """What ``record_result`` did.

    ``accepted``: the value was stored (the slot was empty and the group open).
    ``completed``: this call filled the last slot; then ``results`` (slot order) and
    ``parent`` are set. Exactly one call per group ever sees ``completed`` true.
    """

    accepted: bool
    completed: bool = False
    results: tuple[str, ...] = ()
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """Slots handed out by ``claim_items``, and the group's parent continuation."""

    indices: tuple[int, ...]
    parent: str


class ExecutionStore(Protocol):
    """Atomic group operations the engine needs. Values are opaque strings (JSON).

    Contract per method (all atomic per group id):

    - ``open_group(group_id, size, parent)``: create the group, open, with ``size`` empty
      slots, claim cursor 0 and ``parent``. If the group already exists, do nothing (a
      replayed event re-opens the same id).
    - ``record_result(group_id, index, value)``: if the group exists, is open and slot
      ``index`` is empty, store ``value`` there; if that filled the last empty slot, mark
      the group completed and return ``completed=True`` with all slot values in slot order
      and the parent. Otherwise (unknown group, closed, completed, slot already filled)
      change nothing and return ``accepted=False``.
    - ``close_group(group_id)``: if the group is open, mark it closed and return its
      parent; otherwise return None. Exactly one caller gets the parent; used when a
      branch fails (first failure wins) and as a run-once guard.
    - ``claim_items(group_id, count)``: if the group is open, advance its claim cursor by
      up to ``count`` (never past ``size``) and return the claimed slot indices (possibly
      none) with the parent; return None for an unknown, closed or completed group.
    - ``is_open(group_ids)``: True when every listed group exists and is open.
    - ``known(group_ids)``: True when every listed group exists, whatever its status (a
      group this store never had, or forgot, is unknown: its state was on a lost host).
    - ``delete_group(group_id)``: forget the group (housekeeping; optional for callers).

    Completed and closed groups must be kept at least as long as their execution can
    still receive events (late results must find them closed, not unknown-then-reopened).
    """

    def open_group(self, group_id: str, size: int, parent: str) -> None: ...

    def record_result(self, group_id: str, index: int, value: str) -> RecordOutcome: ...

    def close_group(self, group_id: str) -> str | None: ...

    def claim_items(self, group_id: str, count: int) -> Claim | None: ...

    def is_open(self, group_ids: Sequence[str]) -> bool: ...

    def known(self, group_ids: Sequence[str]) -> bool: ...

    def delete_group(self, group_id: str) -> None: ...


OPEN, COMPLETED, CLOSED = "open", "completed", "closed"


@dataclass
class _Group:
    size: int
    parent: str
    slots: dict[int, str] = field(default_factory=dict)
    status: str = OPEN
    cursor: int = 0


class InMemoryStore:
    """ExecutionStore in a dict under one lock; thread-safe, for the emulator and tests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}

    def open_group(self, group_id: str, size: int, parent: str) -> None:
        with self._lock:
            self._groups.setdefault(group_id, _Group(size, parent))

    def record_result(self, group_id: str, index: int, value: str) -> RecordOutcome:
        with self._lock:
            g = self._groups.get(group_id)
            if g is None or g.status != OPEN or index in g.slots or not 0 <= index < g.size:
                return RecordOutcome(accepted=False)
            g.slots[index] = value
            if len(g.slots) < g.size:
                return RecordOutcome(accepted=True)
            g.status = COMPLETED
            return RecordOutcome(True, True, tuple(g.slots[i] for i in range(g.size)), g.parent)

    def close_group(self, group_id: str) -> str | None:
        with self._lock:
            g = self._groups.get(group_id)
            if g is None or g.status != OPEN:
                return None
            g.status = CLOSED
            return g.parent

    def claim_items(self, group_id: str, count: int) -> Claim | None:
        with self._lock:
            g = self._groups.get(group_id)
            if g is None or g.status != OPEN:
                return None
            end = min(g.size, g.cursor + max(count, 0))
            claimed = tuple(range(g.cursor, end))
            g.cursor = end
            return Claim(claimed, g.parent)

    def is_open(self, group_ids: Sequence[str]) -> bool:
        with self._lock:
            return all(
                (g := self._groups.get(gid)) is not None and g.status == OPEN for gid in group_ids
            )

    def known(self, group_ids: Sequence[str]) -> bool:
        with self._lock:
            return all(gid in self._groups for gid in group_ids)

    def delete_group(self, group_id: str) -> None:
        with self._lock:
            self._groups.pop(group_id, None)

    def group_count(self) -> int:
        """Number of groups held (tests use it to check housekeeping)."""
        with self._lock:
            return len(self._groups)

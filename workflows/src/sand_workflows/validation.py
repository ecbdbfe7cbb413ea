"""What both loaders share: collecting problems, number checks and graph checks.

Validation never stops at the first problem: every rule broken is collected as a
``Problem`` whose location names the file and the state or grain.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from .errors import Problem
from .model import Workflow


class Compiler:
    """Validates one parsed definition and compiles it; ``problems`` collects every rule broken.

    ``grains``, when given, are the grain names the application defines.
    """

    def __init__(self, source: str, grains: Collection[str] | None) -> None:
        self.source = source
        self.grains = None if grains is None else set(grains)
        self.problems: list[Problem] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(f"{self.source}: {where}" if where else self.source, message))

    def compile(self, doc: dict[str, Any], name: str) -> Workflow | None:
        """The workflow, or None when the definition is too broken to build one."""
        raise NotImplementedError


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def reachable_from(start: str, edges: dict[str, list[str]]) -> set[str]:
    """Every node reachable from ``start`` (``start`` included)."""
    return _closure(start, edges, None)


def report_endless(
    edges: dict[str, list[str]],
    terminal: set[str],
    reachable: set[str],
    where: Callable[[str], str],
    problem: Callable[[str, str], None],
) -> None:
    """Report each strongly connected set of reachable states that can never end."""
    reverse: dict[str, list[str]] = {n: [] for n in edges}
    for src, targets in edges.items():
        for t in targets:
            reverse.setdefault(t, []).append(src)
    can_end = set(terminal)
    todo = list(terminal)
    while todo:
        for src in reverse.get(todo.pop(), []):
            if src not in can_end:
                can_end.add(src)
                todo.append(src)
    stuck = sorted(n for n in edges if n in reachable and n not in can_end)
    reported: set[str] = set()
    for n in stuck:
        if n in reported:
            continue
        # the strongly connected component of n among stuck states
        fwd = _closure(n, edges, stuck)
        back = _closure(n, reverse, stuck)
        component = sorted(fwd & back)
        reported.update(component)
        # A stuck state outside a cycle either leads into a reported cycle or lacks a
        # transition, which is reported on its own.
        if len(component) > 1 or n in edges.get(n, []):
            problem(
                where(component[0]),
                f"cycle {' -> '.join(component)} can never end:"
                " no path from it reaches a terminal state",
            )


def _closure(start: str, edges: dict[str, list[str]], within: Iterable[str] | None) -> set[str]:
    allowed = None if within is None else set(within)
    seen = {start}
    todo = [start]
    while todo:
        for t in edges.get(todo.pop(), []):
            if (allowed is None or t in allowed) and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen

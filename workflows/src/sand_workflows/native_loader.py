"""The SAND native format: a graph of grains (``entry``, ``grains``, optional ``exit``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .model import GrainState, State, Workflow, WorkflowKind
from .suggest import did_you_mean
from .validation import Compiler, is_number, reachable_from, report_endless

NATIVE_GRAIN_FIELDS = {"next", "potentialNext", "join", "timeoutSeconds", "comment"}
NATIVE_TOP_FIELDS = {"entry", "exit", "grains", "comment", "name"}


class NativeCompiler(Compiler):
    """Compiles a native definition; each grain becomes a ``GrainState``."""

    # whether a grain list names a grain 'grains' does not define (see ``grain_list``)
    dangling = False

    def compile(self, doc: dict[str, Any], name: str) -> Workflow | None:
        for key in doc:
            if key not in NATIVE_TOP_FIELDS:
                self.problem(
                    "", f"unknown top-level field '{key}' (native format: entry, grains, exit)"
                )
        grains = doc.get("grains")
        if not isinstance(grains, dict) or not grains:
            self.problem("grains", "'grains' must be a non-empty mapping of grain name to settings")
            return None
        names = {g for g in grains if isinstance(g, str)}
        entry = doc.get("entry")
        if not isinstance(entry, str) or entry not in names:
            self.problem("entry", f"entry {entry!r} must name a grain of 'grains'")
            entry = None
        exit_ = doc.get("exit")
        if exit_ is not None and (not isinstance(exit_, str) or exit_ not in names):
            self.problem("exit", f"exit {exit_!r} must name a grain of 'grains'")
            exit_ = None
        specs: dict[str, dict[str, Any]] = {}
        for g, spec in grains.items():
            loc = f"grains.{g}"
            if not isinstance(g, str) or not g:
                self.problem("grains", f"grain name {g!r} must be a non-empty string")
                continue
            if self.grains is not None and g not in self.grains:
                known = ", ".join(sorted(self.grains)) or "none"
                self.problem(
                    loc,
                    f"'{g}' names no grain of the app (grains: {known})"
                    + did_you_mean(g, self.grains),
                )
            spec = {} if spec is None else spec
            if not isinstance(spec, dict):
                self.problem(loc, "grain settings must be a mapping")
                continue
            for key in spec:
                if key not in NATIVE_GRAIN_FIELDS:
                    self.problem(
                        f"{loc}.{key}",
                        f"unknown field '{key}'"
                        f" (allowed: {', '.join(sorted(NATIVE_GRAIN_FIELDS))})",
                    )
            specs[g] = spec
        nodes: dict[str, GrainState] = {}
        for g, spec in specs.items():
            loc = f"grains.{g}"
            nxt = self.grain_list(spec.get("next", []), f"{loc}.next", names)
            pot = self.grain_list(spec.get("potentialNext", []), f"{loc}.potentialNext", names)
            if nxt and pot:
                self.problem(loc, "a grain has either 'next' or 'potentialNext', not both")
            join = spec.get("join", False)
            if not isinstance(join, bool):
                self.problem(f"{loc}.join", f"must be true or false, got {join!r}")
                join = False
            timeout = spec.get("timeoutSeconds")
            if timeout is not None and (not is_number(timeout) or timeout <= 0):
                self.problem(f"{loc}.timeoutSeconds", f"must be a positive number, got {timeout!r}")
                timeout = None
            if g == exit_ and (nxt or pot):
                self.problem(loc, "the exit grain must not have 'next' or 'potentialNext'")
            nodes[g] = GrainState(
                name=g,
                location=loc,
                next_grains=tuple(nxt),
                potential_next=tuple(pot),
                join=join,
                timeout_s=None if timeout is None else float(timeout),
            )
        preds: dict[str, set[str]] = {g: set() for g in nodes}
        for g, node in nodes.items():
            for t in node.targets():
                if t in preds:
                    preds[t].add(g)
        if entry is not None and entry in nodes and nodes[entry].join:
            self.problem(f"grains.{entry}", "the entry grain cannot be a join")
        edges = {g: list(n.targets()) for g, n in nodes.items()}
        terminal = {g for g, n in nodes.items() if n.terminal}
        concurrent = any(
            len(n.next_grains) > 1 or len(n.potential_next) > 1 for n in nodes.values()
        )
        # a misspelled next grain leaves its target unreachable: one problem, not two
        if entry is not None and not self.dangling:
            reachable = reachable_from(entry, edges)
            for g in nodes:
                if g not in reachable:
                    what = "join " if nodes[g].join else ""
                    self.problem(
                        f"grains.{g}",
                        f"unreachable {what}grain: no grain leads to it from entry '{entry}'",
                    )
            report_endless(edges, terminal, reachable, lambda n: f"grains.{n}", self.problem)
            ends = sorted(g for g in reachable if g in terminal and not nodes[g].potential_next)
            static_fan_out = any(len(n.next_grains) > 1 for n in nodes.values())
            if exit_ is None and static_fan_out and len(ends) > 1:
                self.problem(
                    "exit",
                    f"grains {', '.join(ends)} can each end the execution after a fan-out;"
                    " name the one whose output is the result with 'exit'",
                )
        if self.problems or entry is None:
            return None
        states: dict[str, State] = {
            g: replace(n, predecessors=tuple(sorted(preds[g]))) for g, n in nodes.items()
        }
        return Workflow(
            self.source, name, WorkflowKind.NATIVE, entry, states, exit_, concurrent, doc
        )

    def grain_list(self, value: Any, where: str, names: set[str]) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(where, f"must be a grain name or a list of grain names, got {value!r}")
            return []
        out = []
        for v in value:
            if v not in names:
                self.problem(where, f"'{v}' names no grain of 'grains'" + did_you_mean(v, names))
                self.dangling = True
            elif v in out:
                self.problem(where, f"'{v}' is listed twice")
            else:
                out.append(v)
        return out

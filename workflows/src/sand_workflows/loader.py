"""Reading and validating definitions; compiling them into ``model.Workflow``.

Validation never stops at the first problem: every rule broken is collected as a
``Problem`` whose location names the file and the state or grain.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path as FsPath
from typing import Any

import yaml

from . import errors
from .choice import Rule, compile_rule, parse_timestamp
from .errors import Problem, WorkflowError
from .intrinsics import check_intrinsic
from .model import ROOT, Catcher, Retrier, State, Workflow
from .paths import Path, check_path, check_reference_path, compile_path, compile_reference_path

STATE_TYPES = ("Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map")

_COMMON = {"Type", "Comment"}
_IO = {"InputPath", "OutputPath"}
_FLOW = {"Next", "End"}
_RESULT = {"Parameters", "ResultSelector", "ResultPath", "Retry", "Catch"}
ALLOWED_FIELDS: dict[str, set[str]] = {
    "Task": _COMMON
    | _IO
    | _FLOW
    | _RESULT
    | {
        "Resource",
        "TimeoutSeconds",
        "TimeoutSecondsPath",
        "HeartbeatSeconds",
        "HeartbeatSecondsPath",
        "Credentials",
    },
    "Pass": _COMMON | _IO | _FLOW | {"Parameters", "ResultPath", "Result"},
    "Choice": _COMMON | _IO | {"Choices", "Default"},
    "Wait": _COMMON | _IO | _FLOW | {"Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
    "Succeed": _COMMON | _IO,
    "Fail": _COMMON | {"Error", "ErrorPath", "Cause", "CausePath"},
    "Parallel": _COMMON | _IO | _FLOW | _RESULT | {"Branches"},
    "Map": _COMMON
    | _IO
    | _FLOW
    | _RESULT
    | {
        "ItemsPath",
        "ItemSelector",
        "ItemProcessor",
        "Iterator",
        "MaxConcurrency",
        "MaxConcurrencyPath",
        "Label",
    },
}
# Spec fields that SAND does not implement: refused rather than silently ignored.
UNSUPPORTED_FIELDS = {
    "Map": {
        "ItemReader",
        "ItemBatcher",
        "ResultWriter",
        "ToleratedFailurePercentage",
        "ToleratedFailurePercentagePath",
        "ToleratedFailureCount",
        "ToleratedFailureCountPath",
    },
}
JITTER_STRATEGIES = ("FULL", "NONE")
NATIVE_GRAIN_FIELDS = {"next", "potentialNext", "join", "timeoutSeconds", "comment"}
NATIVE_TOP_FIELDS = {"entry", "exit", "grains", "comment", "name"}
ASL_TOP_FIELDS = {"StartAt", "States", "Comment", "Version"}


def parse_text(text: str, source: str) -> tuple[Any, list[Problem]]:
    """Parse JSON (``*.json``) or YAML; a syntax error becomes one Problem with line and column."""
    if source.lower().endswith(".json"):
        try:
            return json.loads(text), []
        except json.JSONDecodeError as exc:
            return None, [
                Problem(f"{source}:{exc.lineno}:{exc.colno}", f"malformed JSON: {exc.msg}")
            ]
    try:
        return yaml.safe_load(text), []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        return None, [Problem(where, f"malformed YAML: {exc.problem or exc.context}")]
    except yaml.YAMLError as exc:
        return None, [Problem(source, f"malformed YAML: {exc}")]


def compile_document(
    doc: Any, source: str, grains: Collection[str] | None = None, name: str | None = None
) -> tuple[Workflow | None, list[Problem]]:
    """Validate and compile a parsed definition; the workflow is None when problems exist."""
    wf_name = name or os.path.splitext(os.path.basename(source))[0] or "workflow"
    if not isinstance(doc, dict):
        return None, [Problem(source, "a workflow definition must be an object")]
    if "StartAt" in doc or "States" in doc:
        compiler: _Compiler = _AslCompiler(source, grains)
    else:
        compiler = _NativeCompiler(source, grains)
    wf = compiler.compile(doc, wf_name)
    problems = compiler.problems
    return (None if problems else wf), problems


def load_workflow_text(
    text: str,
    source: str = "workflow.yaml",
    grains: Collection[str] | None = None,
    name: str | None = None,
) -> Workflow:
    """Parse, validate and compile a definition; raises WorkflowError listing every problem.

    ``grains``, when given, names the grains the application defines: a Task Resource or a
    native grain outside it is a problem.
    """
    doc, problems = parse_text(text, source)
    if problems:
        raise WorkflowError(problems)
    wf, problems = compile_document(doc, source, grains, name)
    if problems or wf is None:
        raise WorkflowError(problems)
    return wf


def load_workflow(path: str | os.PathLike[str], grains: Collection[str] | None = None) -> Workflow:
    """Read a definition file (JSON or YAML, native or ASL); raises WorkflowError."""
    p = FsPath(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowError([Problem(p.name, f"cannot read the file: {exc.strerror}")]) from None
    return load_workflow_text(text, source=p.name, grains=grains)


def validate_workflow(
    path: str | os.PathLike[str], grains: Collection[str] | None = None
) -> list[Problem]:
    """Every problem of a definition file; ``[]`` when it is valid."""
    try:
        load_workflow(path, grains)
    except WorkflowError as exc:
        return exc.problems
    return []


class _Compiler:
    def __init__(self, source: str, grains: Collection[str] | None) -> None:
        self.source = source
        self.grains = None if grains is None else set(grains)
        self.problems: list[Problem] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(f"{self.source}: {where}" if where else self.source, message))

    def compile(self, doc: dict[str, Any], name: str) -> Workflow | None:
        raise NotImplementedError


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class _AslCompiler(_Compiler):
    def compile(self, doc: dict[str, Any], name: str) -> Workflow | None:
        self.states: dict[str, State] = {}
        self.seen_names: dict[str, str] = {}
        for key in doc:
            if key == "TimeoutSeconds":
                self.problem(
                    "TimeoutSeconds", "a machine-wide TimeoutSeconds is not supported by SAND"
                )
            elif key == "QueryLanguage":
                if doc[key] != "JSONPath":
                    self.problem("QueryLanguage", f"only JSONPath is supported, got {doc[key]!r}")
            elif key not in ASL_TOP_FIELDS:
                self.problem("", f"unknown top-level field '{key}'")
        if "Version" in doc and doc["Version"] != "1.0":
            self.problem("Version", f"only version '1.0' is supported, got {doc['Version']!r}")
        start = self.scope(doc, "")
        if start is None:
            return None
        return Workflow(self.source, name, "asl", start, self.states, definition=doc)

    # A scope is the machine itself, a Parallel branch or a Map processor.
    def scope(self, doc: Any, prefix: str) -> str | None:
        where = prefix.rstrip(".")
        if not isinstance(doc, dict):
            self.problem(where, "must be an object with 'StartAt' and 'States'")
            return None
        states = doc.get("States")
        start = doc.get("StartAt")
        if not isinstance(states, dict) or not states:
            self.problem(
                where + ("." if where else "") + "States", "'States' must be a non-empty object"
            )
            states = {}
        if not isinstance(start, str):
            self.problem(
                where + ("." if where else "") + "StartAt",
                "'StartAt' must be a string naming a state",
            )
        elif states and start not in states:
            self.problem(
                where + ("." if where else "") + "StartAt", f"StartAt '{start}' names no state"
            )
        if prefix:
            for key in doc:
                if key not in {"StartAt", "States", "Comment", "ProcessorConfig"}:
                    self.problem(where, f"unknown field '{key}'")
        names = set(states)
        edges: dict[str, list[str]] = {}
        terminal: set[str] = set()
        for state_name, spec in states.items():
            loc = f"{prefix}States.{state_name}"
            if not isinstance(state_name, str) or not state_name:
                self.problem(loc, "a state name must be a non-empty string")
                continue
            if len(state_name) > 80:
                self.problem(
                    loc, f"a state name must be at most 80 characters, got {len(state_name)}"
                )
            if state_name in self.seen_names:
                self.problem(
                    loc,
                    f"state name '{state_name}' is already used at {self.seen_names[state_name]};"
                    " names must be unique across the machine",
                )
                continue
            self.seen_names[state_name] = loc
            state = self.state(state_name, spec, loc, names)
            if state is None:
                continue
            self.states[state_name] = state
            targets = [t for t in _targets(state) if t in names]
            edges[state_name] = targets
            if state.end or state.type in ("Succeed", "Fail"):
                terminal.add(state_name)
        if isinstance(start, str) and start in names:
            self.graph_checks(start, edges, terminal, prefix)
        return start if isinstance(start, str) and start in states else None

    def graph_checks(
        self, start: str, edges: dict[str, list[str]], terminal: set[str], prefix: str
    ) -> None:
        reachable = {start}
        todo = [start]
        while todo:
            for t in edges.get(todo.pop(), []):
                if t not in reachable:
                    reachable.add(t)
                    todo.append(t)
        for state_name in edges:
            if state_name not in reachable:
                self.problem(
                    f"{prefix}States.{state_name}", "unreachable: no transition leads to this state"
                )
        _report_endless(edges, terminal, reachable, lambda n: f"{prefix}States.{n}", self.problem)

    def state(self, name: str, spec: Any, loc: str, names: set[str]) -> State | None:
        if not isinstance(spec, dict):
            self.problem(loc, "a state must be an object")
            return None
        typ = spec.get("Type")
        if typ not in STATE_TYPES:
            self.problem(
                loc + ".Type",
                f"unknown state Type {typ!r}; expected one of {', '.join(STATE_TYPES)}"
                if "Type" in spec
                else "a state must have a 'Type'",
            )
            return None
        allowed = ALLOWED_FIELDS[typ]
        for key in spec:
            if key in UNSUPPORTED_FIELDS.get(typ, ()):
                self.problem(f"{loc}.{key}", f"'{key}' is not supported by SAND")
            elif key not in allowed:
                self.problem(f"{loc}.{key}", f"unknown field '{key}' in a {typ} state")
        fields: dict[str, Any] = {"name": name, "type": typ, "location": loc}
        if typ in ("Task", "Pass", "Wait", "Parallel", "Map"):
            self.flow(spec, loc, names, fields)
        if "InputPath" in spec and typ != "Fail":
            fields["input_path"] = self.path_or_null(spec, "InputPath", loc)
        if "OutputPath" in spec and typ != "Fail":
            fields["output_path"] = self.path_or_null(spec, "OutputPath", loc)
        if "ResultPath" in spec and typ in ("Task", "Pass", "Parallel", "Map"):
            fields["result_path"] = self.result_path(spec["ResultPath"], f"{loc}.ResultPath")
        for key, attr in (("Parameters", "parameters"), ("ResultSelector", "result_selector")):
            if key in spec and key in allowed:
                if typ == "Map" and key == "Parameters":
                    continue
                fields[attr] = self.template(spec[key], f"{loc}.{key}")
        if typ in ("Task", "Parallel", "Map"):
            fields["retry"] = self.retriers(spec.get("Retry"), f"{loc}.Retry")
            fields["catch"] = self.catchers(spec.get("Catch"), f"{loc}.Catch", names)
        getattr(self, "state_" + typ.lower())(spec, loc, names, fields)
        try:
            return State(**fields)
        except TypeError:  # a field had the wrong shape; already reported
            return None

    def flow(self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]) -> None:
        has_next = "Next" in spec
        end = spec.get("End")
        if "End" in spec and not isinstance(end, bool):
            self.problem(f"{loc}.End", f"End must be true or false, got {end!r}")
        if has_next and end is True:
            self.problem(loc, "a state must not have both 'Next' and 'End': true")
        elif not has_next and end is not True:
            self.problem(loc, "a state must have 'Next' or 'End': true")
        if has_next:
            target = spec["Next"]
            if not isinstance(target, str):
                self.problem(f"{loc}.Next", f"Next must be a state name, got {target!r}")
            elif target not in names:
                self.problem(f"{loc}.Next", f"Next '{target}' names no state in this scope")
            else:
                fields["next"] = target
        fields["end"] = end is True

    def path_or_null(self, spec: dict[str, Any], key: str, loc: str) -> Path | None:
        value = spec[key]
        if value is None:
            return None
        err = check_path(value)
        if err:
            self.problem(f"{loc}.{key}", err)
            return ROOT
        return compile_path(value)

    def result_path(self, value: Any, where: str) -> Path | None:
        if value is None:
            return None
        err = check_reference_path(value, allow_context=False)
        if err:
            self.problem(where, f"ResultPath must be a reference path: {err}")
            return ROOT
        return compile_reference_path(value, False)

    def reference(self, value: Any, where: str, what: str) -> Path | None:
        err = check_reference_path(value)
        if err:
            self.problem(where, f"{what} must be a reference path: {err}")
            return None
        return compile_reference_path(value)

    def template(self, value: Any, where: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(where, "a Payload Template must be an object")
            return None
        self.check_template(value, where)
        return value

    def check_template(self, value: Any, where: str) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                self.check_template(item, f"{where}[{i}]")
            return
        if not isinstance(value, dict):
            return
        stripped: set[str] = set()
        for key, item in value.items():
            if not isinstance(key, str):
                self.problem(where, f"field name {key!r} must be a string")
                continue
            plain = key[:-2] if key.endswith(".$") else key
            if plain in stripped:
                self.problem(f"{where}.{key}", f"duplicate field '{plain}' after stripping '.$'")
            stripped.add(plain)
            if key.endswith(".$"):
                self.check_dynamic(item, f"{where}.{key}")
            else:
                self.check_template(item, f"{where}.{key}")

    def check_dynamic(self, item: Any, where: str) -> None:
        if not isinstance(item, str):
            self.problem(
                where, f"a field ending in '.$' must be a Path or intrinsic function, got {item!r}"
            )
        elif item.startswith("$"):
            err = check_path(item)
            if err:
                self.problem(where, err)
        else:
            for message in check_intrinsic(item):
                self.problem(where, message)

    def error_names(self, value: Any, where: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self.problem(where, "ErrorEquals must be a non-empty array of strings")
            return ()
        for v in value:
            if v.startswith("States.") and v not in errors.KNOWN_ERRORS:
                self.problem(
                    where, f"unknown error name '{v}' (names beginning 'States.' are reserved)"
                )
        if errors.ALL in value and len(value) > 1:
            self.problem(where, "States.ALL must appear alone in ErrorEquals")
        return tuple(value)

    def retriers(self, value: Any, where: str) -> tuple[Retrier, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.problem(where, "Retry must be an array of Retriers")
            return ()
        out = []
        for i, spec in enumerate(value):
            loc = f"{where}[{i}]"
            if not isinstance(spec, dict):
                self.problem(loc, "a Retrier must be an object")
                continue
            for key in spec:
                if key not in {
                    "ErrorEquals",
                    "IntervalSeconds",
                    "MaxAttempts",
                    "BackoffRate",
                    "MaxDelaySeconds",
                    "JitterStrategy",
                    "Comment",
                }:
                    self.problem(loc, f"unknown field '{key}' in a Retrier")
            names = self.error_names(spec.get("ErrorEquals"), f"{loc}.ErrorEquals")
            if errors.ALL in names and i != len(value) - 1:
                self.problem(loc, "a Retrier with States.ALL must be the last Retrier")
            interval = spec.get("IntervalSeconds", 1)
            if not _is_int(interval) or interval <= 0:
                self.problem(
                    f"{loc}.IntervalSeconds", f"must be a positive integer, got {interval!r}"
                )
                interval = 1
            attempts = spec.get("MaxAttempts", 3)
            if not _is_int(attempts) or attempts < 0:
                self.problem(
                    f"{loc}.MaxAttempts", f"must be a non-negative integer, got {attempts!r}"
                )
                attempts = 0
            rate = spec.get("BackoffRate", 2.0)
            if not _is_number(rate) or rate < 1.0:
                self.problem(f"{loc}.BackoffRate", f"must be a number >= 1.0, got {rate!r}")
                rate = 1.0
            max_delay = spec.get("MaxDelaySeconds")
            if max_delay is not None and (not _is_int(max_delay) or max_delay <= 0):
                self.problem(
                    f"{loc}.MaxDelaySeconds", f"must be a positive integer, got {max_delay!r}"
                )
                max_delay = None
            jitter = spec.get("JitterStrategy")
            if jitter is not None and jitter not in JITTER_STRATEGIES:
                self.problem(
                    f"{loc}.JitterStrategy",
                    f"must be one of {', '.join(JITTER_STRATEGIES)}, got {jitter!r}",
                )
                jitter = None
            out.append(Retrier(names, float(interval), attempts, float(rate), max_delay, jitter))
        return tuple(out)

    def catchers(self, value: Any, where: str, names: set[str]) -> tuple[Catcher, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.problem(where, "Catch must be an array of Catchers")
            return ()
        out = []
        for i, spec in enumerate(value):
            loc = f"{where}[{i}]"
            if not isinstance(spec, dict):
                self.problem(loc, "a Catcher must be an object")
                continue
            for key in spec:
                if key not in {"ErrorEquals", "Next", "ResultPath", "Comment"}:
                    self.problem(loc, f"unknown field '{key}' in a Catcher")
            error_names = self.error_names(spec.get("ErrorEquals"), f"{loc}.ErrorEquals")
            if errors.ALL in error_names and i != len(value) - 1:
                self.problem(loc, "a Catcher with States.ALL must be the last Catcher")
            target = spec.get("Next")
            if not isinstance(target, str):
                self.problem(loc, "a Catcher must have 'Next' naming a state")
                continue
            if target not in names:
                self.problem(f"{loc}.Next", f"Next '{target}' names no state in this scope")
                continue
            rp = (
                self.result_path(spec["ResultPath"], f"{loc}.ResultPath")
                if "ResultPath" in spec
                else ROOT
            )
            out.append(Catcher(error_names, target, rp))
        return tuple(out)

    def positive_or_path(
        self, spec: dict[str, Any], key: str, loc: str, fields: dict[str, Any], attr: str
    ) -> None:
        if key in spec and key + "Path" in spec:
            self.problem(loc, f"a state must not have both '{key}' and '{key}Path'")
        if key in spec:
            v = spec[key]
            if not _is_int(v) or v <= 0:
                self.problem(f"{loc}.{key}", f"must be a positive integer, got {v!r}")
            else:
                fields[attr] = float(v)
        if key + "Path" in spec:
            fields[attr + "_path"] = self.reference(
                spec[key + "Path"], f"{loc}.{key}Path", key + "Path"
            )

    # -- per type --------------------------------------------------------------------------
    def state_task(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        resource = spec.get("Resource")
        if not isinstance(resource, str) or not resource:
            self.problem(loc, "a Task state must have 'Resource' naming a grain")
        elif self.grains is not None and resource not in self.grains:
            known = ", ".join(sorted(self.grains)) or "none"
            self.problem(
                f"{loc}.Resource",
                f"Resource '{resource}' names no grain of the app (grains: {known})",
            )
        fields["resource"] = resource
        fields["timeout_s"] = 60.0  # spec "Task State": the default TimeoutSeconds is 60
        self.positive_or_path(spec, "TimeoutSeconds", loc, fields, "timeout")
        if "timeout" in fields:
            fields["timeout_s"] = fields.pop("timeout")
        if "timeout_path" in fields:
            fields["timeout_s"] = None
        heartbeat: dict[str, Any] = {}
        self.positive_or_path(spec, "HeartbeatSeconds", loc, heartbeat, "heartbeat")
        hb = heartbeat.get("heartbeat")
        if hb is not None and fields["timeout_s"] is not None and hb >= fields["timeout_s"]:
            self.problem(f"{loc}.HeartbeatSeconds", "must be smaller than TimeoutSeconds")
        if "Credentials" in spec and not isinstance(spec["Credentials"], dict):
            self.problem(f"{loc}.Credentials", "must be an object")

    def state_pass(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if "Result" in spec:
            fields["has_result"] = True
            fields["result"] = spec["Result"]

    def state_choice(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        choices = spec.get("Choices")
        if not isinstance(choices, list) or not choices:
            self.problem(loc, "a Choice state must have 'Choices', a non-empty array")
            choices = []
        compiled: list[tuple[Rule, str]] = []
        for i, rule_spec in enumerate(choices):
            where = f"{loc}.Choices[{i}]"
            found: list[tuple[str, str]] = []
            rule = compile_rule(rule_spec, where, found, top=True)
            for w, m in found:
                self.problem(w, m)
            target = rule_spec.get("Next") if isinstance(rule_spec, dict) else None
            if "Next" in (rule_spec if isinstance(rule_spec, dict) else {}) and (
                not isinstance(target, str) or target not in names
            ):
                self.problem(f"{where}.Next", f"Next {target!r} names no state in this scope")
                continue
            if rule is not None and isinstance(target, str):
                compiled.append((rule, target))
        fields["choices"] = tuple(compiled)
        if "Default" in spec:
            default = spec["Default"]
            if not isinstance(default, str) or default not in names:
                self.problem(f"{loc}.Default", f"Default {default!r} names no state in this scope")
            else:
                fields["default"] = default

    def state_wait(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        given = [k for k in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if k in spec]
        if len(given) != 1:
            self.problem(
                loc,
                "a Wait state must have exactly one of"
                " Seconds, SecondsPath, Timestamp, TimestampPath"
                + (f"; found {', '.join(given)}" if given else ""),
            )
        if "Seconds" in spec:
            v = spec["Seconds"]
            if not _is_int(v) or v < 0:
                self.problem(f"{loc}.Seconds", f"must be a non-negative integer, got {v!r}")
            else:
                fields["seconds"] = float(v)
        if "Timestamp" in spec:
            if parse_timestamp(spec["Timestamp"]) is None:
                self.problem(
                    f"{loc}.Timestamp", f"must be an RFC 3339 timestamp, got {spec['Timestamp']!r}"
                )
            else:
                fields["timestamp"] = spec["Timestamp"]
        for key, attr in (("SecondsPath", "seconds_path"), ("TimestampPath", "timestamp_path")):
            if key in spec:
                fields[attr] = self.reference(spec[key], f"{loc}.{key}", key)

    def state_succeed(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        fields["end"] = True

    def state_fail(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        for key, attr in (("Error", "error"), ("Cause", "cause")):
            if key in spec and key + "Path" in spec:
                self.problem(loc, f"a Fail state must not have both '{key}' and '{key}Path'")
            if key in spec:
                if not isinstance(spec[key], str):
                    self.problem(f"{loc}.{key}", f"must be a string, got {spec[key]!r}")
                else:
                    fields[attr] = spec[key]
            if key + "Path" in spec:
                expr = spec[key + "Path"]
                where = f"{loc}.{key}Path"
                if isinstance(expr, str) and not expr.startswith("$"):
                    for message in check_intrinsic(expr):
                        self.problem(where, message)
                elif self.reference(expr, where, key + "Path") is None:
                    continue
                fields[attr + "_expr"] = expr
        fields["end"] = True

    def state_parallel(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        branches = spec.get("Branches")
        if not isinstance(branches, list) or not branches:
            self.problem(loc, "a Parallel state must have 'Branches', a non-empty array")
            return
        starts = []
        for i, branch in enumerate(branches):
            start = self.scope(branch, f"{loc}.Branches[{i}].")
            if start is not None:
                starts.append(start)
        fields["branches"] = tuple(starts)

    def state_map(
        self, spec: dict[str, Any], loc: str, names: set[str], fields: dict[str, Any]
    ) -> None:
        if "ItemProcessor" in spec and "Iterator" in spec:
            self.problem(loc, "a Map state must not have both 'ItemProcessor' and 'Iterator'")
        key = "ItemProcessor" if "ItemProcessor" in spec else "Iterator"
        if key not in spec:
            self.problem(
                loc, "a Map state must have 'ItemProcessor' (or the deprecated 'Iterator')"
            )
        else:
            fields["processor"] = self.scope(spec[key], f"{loc}.{key}.")
        if "ItemSelector" in spec and "Parameters" in spec:
            self.problem(loc, "a Map state must not have both 'ItemSelector' and 'Parameters'")
        for sel in ("ItemSelector", "Parameters"):
            if sel in spec:
                fields["item_selector"] = self.template(spec[sel], f"{loc}.{sel}")
        if "ItemsPath" in spec:
            p = self.reference(spec["ItemsPath"], f"{loc}.ItemsPath", "ItemsPath")
            if p is not None:
                fields["items_path"] = p
        if "MaxConcurrency" in spec and "MaxConcurrencyPath" in spec:
            self.problem(
                loc, "a Map state must not have both 'MaxConcurrency' and 'MaxConcurrencyPath'"
            )
        if "MaxConcurrency" in spec:
            v = spec["MaxConcurrency"]
            if not _is_int(v) or v < 0:
                self.problem(f"{loc}.MaxConcurrency", f"must be a non-negative integer, got {v!r}")
            else:
                fields["max_concurrency"] = v
        if "MaxConcurrencyPath" in spec:
            fields["max_concurrency_path"] = self.reference(
                spec["MaxConcurrencyPath"], f"{loc}.MaxConcurrencyPath", "MaxConcurrencyPath"
            )


def _targets(state: State) -> Iterable[str]:
    if state.next:
        yield state.next
    for _, target in state.choices:
        yield target
    if state.default:
        yield state.default
    for c in state.catch:
        yield c.next
    yield from state.next_grains
    yield from state.potential_next


def _report_endless(
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


def _closure(start: str, edges: dict[str, list[str]], within: Iterable[str]) -> set[str]:
    allowed = set(within)
    seen = {start}
    todo = [start]
    while todo:
        for t in edges.get(todo.pop(), []):
            if t in allowed and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


class _NativeCompiler(_Compiler):
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
                self.problem(loc, f"'{g}' names no grain of the app (grains: {known})")
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
        nodes: dict[str, dict[str, Any]] = {}
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
            if timeout is not None and (not _is_number(timeout) or timeout <= 0):
                self.problem(f"{loc}.timeoutSeconds", f"must be a positive number, got {timeout!r}")
                timeout = None
            if g == exit_ and (nxt or pot):
                self.problem(loc, "the exit grain must not have 'next' or 'potentialNext'")
            nodes[g] = {"next": nxt, "potential": pot, "join": join, "timeout": timeout}
        preds: dict[str, set[str]] = {g: set() for g in nodes}
        for g, node in nodes.items():
            for t in node["next"] + node["potential"]:
                if t in preds:
                    preds[t].add(g)
        if entry is not None and entry in nodes and nodes[entry]["join"]:
            self.problem(f"grains.{entry}", "the entry grain cannot be a join")
        edges = {g: list(n["next"] + n["potential"]) for g, n in nodes.items()}
        terminal = {g for g, n in nodes.items() if not n["next"]}
        concurrent = any(len(n["next"]) > 1 or len(n["potential"]) > 1 for n in nodes.values())
        if entry is not None:
            reachable = {entry}
            todo = [entry]
            while todo:
                for t in edges.get(todo.pop(), []):
                    if t not in reachable:
                        reachable.add(t)
                        todo.append(t)
            for g in nodes:
                if g not in reachable:
                    what = "join " if nodes[g]["join"] else ""
                    self.problem(
                        f"grains.{g}",
                        f"unreachable {what}grain: no grain leads to it from entry '{entry}'",
                    )
            _report_endless(edges, terminal, reachable, lambda n: f"grains.{n}", self.problem)
            ends = sorted(g for g in reachable if g in terminal and not nodes[g]["potential"])
            static_fan_out = any(len(n["next"]) > 1 for n in nodes.values())
            if exit_ is None and static_fan_out and len(ends) > 1:
                self.problem(
                    "exit",
                    f"grains {', '.join(ends)} can each end the execution after a fan-out;"
                    " name the one whose output is the result with 'exit'",
                )
        if self.problems or entry is None:
            return None
        states = {
            g: State(
                name=g,
                type="Grain",
                location=f"grains.{g}",
                next_grains=tuple(n["next"]),
                potential_next=tuple(n["potential"]),
                join=n["join"],
                timeout_s=None if n["timeout"] is None else float(n["timeout"]),
                predecessors=tuple(sorted(preds[g])),
                end=not n["next"] and not n["potential"],
            )
            for g, n in nodes.items()
        }
        return Workflow(self.source, name, "native", entry, states, exit_, concurrent, doc)

    def grain_list(self, value: Any, where: str, names: set[str]) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(where, f"must be a grain name or a list of grain names, got {value!r}")
            return []
        out = []
        for v in value:
            if v not in names:
                self.problem(where, f"'{v}' names no grain of 'grains'")
            elif v in out:
                self.problem(where, f"'{v}' is listed twice")
            else:
                out.append(v)
        return out

"""Validation of what a machine's expressions read (decision 0020).

Run once the machine compiled without problems. Every ``$name`` a JSONPath field reads
must be assigned by some state of its own scope or of an enclosing one (a Parallel branch
and a Map iteration read outward, never inward); a JSONata expression may read any name
(Step Functions accepts such a definition and fails the state at run time only where the
value is needed and undefined: ``States.QueryEvaluationError``). A JSONata field may read
only the ``$states`` fields that exist when it is evaluated (``$states.result`` after a
result, ``$states.errorOutput`` in a Catcher).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .intrinsics import Call, PathArg, parse_intrinsic
from .jsonata_lang import JsonataSyntaxError, is_expression, parse
from .paths import PathSyntaxError, compile_path

Problem = Callable[[str, str], None]

BEFORE_RESULT = frozenset({"input", "context"})
WITH_RESULT = frozenset({"input", "result", "context"})
IN_CATCH = frozenset({"input", "errorOutput", "context"})
_RESULT_TYPES = {"Task", "Parallel", "Map"}
_PATH_FIELDS = (
    "InputPath",
    "OutputPath",
    "ItemsPath",
    "SecondsPath",
    "TimestampPath",
    "TimeoutSecondsPath",
    "HeartbeatSecondsPath",
    "MaxConcurrencyPath",
    "ErrorPath",
    "CausePath",
)
_TEMPLATE_FIELDS = ("Parameters", "ResultSelector", "ItemSelector", "Assign")
_RULE_PATHS = ("Variable",)


def check_references(doc: dict[str, Any], machine_jsonata: bool, problem: Problem) -> None:
    """Report each unknown variable and each ``$states`` field read where it does not exist."""
    _scope(doc, "", frozenset(), machine_jsonata, problem)


def _scope(
    scope: Any, prefix: str, outer: frozenset[str], machine_jsonata: bool, problem: Problem
) -> None:
    states = scope.get("States") if isinstance(scope, dict) else None
    if not isinstance(states, dict):
        return
    visible = outer | {n for spec in states.values() for n in assigned_names(spec)}
    for name, spec in states.items():
        if not isinstance(spec, dict):
            continue
        loc = f"{prefix}States.{name}"
        default = "JSONata" if machine_jsonata else "JSONPath"
        jsonata = spec.get("QueryLanguage", default) == "JSONata"
        fields = _jsonata_fields(spec) if jsonata else _jsonpath_fields(spec)
        for where, value, allowed in fields:
            _check_value(f"{loc}.{where}", value, jsonata, allowed, visible, problem)
        if spec.get("Type") == "Parallel" and isinstance(spec.get("Branches"), list):
            for i, branch in enumerate(spec["Branches"]):
                _scope(branch, f"{loc}.Branches[{i}].", visible, machine_jsonata, problem)
        if spec.get("Type") == "Map":
            key = "ItemProcessor" if "ItemProcessor" in spec else "Iterator"
            _scope(spec.get(key), f"{loc}.{key}.", visible, machine_jsonata, problem)


def assigned_names(spec: Any) -> set[str]:
    """The variables a state may assign: its Assign, its Choice Rules' and its Catchers'."""
    if not isinstance(spec, dict):
        return set()
    assigns = [spec.get("Assign")]
    for key in ("Choices", "Catch"):
        items = spec.get(key)
        if isinstance(items, list):
            assigns += [item.get("Assign") for item in items if isinstance(item, dict)]
    return {
        key[:-2] if key.endswith(".$") else key
        for assign in assigns
        if isinstance(assign, dict)
        for key in assign
        if isinstance(key, str)
    }


# -- which fields a state reads, and what each may see -------------------------------------
Field = tuple[str, Any, frozenset[str]]


def _jsonata_fields(spec: dict[str, Any]) -> Iterator[Field]:
    late = WITH_RESULT if spec.get("Type") in _RESULT_TYPES else BEFORE_RESULT
    for key, value in spec.items():
        if key in {"Output", "Assign"}:
            yield key, value, late
        elif key not in {"Choices", "Catch", "Branches", "ItemProcessor", "Iterator"}:
            yield key, value, BEFORE_RESULT
    for i, rule in enumerate(_objects(spec.get("Choices"))):
        for key in ("Condition", "Assign", "Output"):
            if key in rule:
                yield f"Choices[{i}].{key}", rule[key], BEFORE_RESULT
    for i, catcher in enumerate(_objects(spec.get("Catch"))):
        for key in ("Assign", "Output"):
            if key in catcher:
                yield f"Catch[{i}].{key}", catcher[key], IN_CATCH


def _jsonpath_fields(spec: dict[str, Any]) -> Iterator[Field]:
    for key in _PATH_FIELDS:
        if isinstance(spec.get(key), str):
            yield key, spec[key], BEFORE_RESULT
    for key in _TEMPLATE_FIELDS:
        if key in spec:
            yield key, _dynamic_values(spec[key]), BEFORE_RESULT
    if spec.get("Type") == "Map" and "Parameters" in spec:
        yield "Parameters", _dynamic_values(spec["Parameters"]), BEFORE_RESULT
    for i, rule in enumerate(_objects(spec.get("Choices"))):
        yield f"Choices[{i}]", list(_rule_paths(rule)), BEFORE_RESULT
        if "Assign" in rule:
            yield f"Choices[{i}].Assign", _dynamic_values(rule["Assign"]), BEFORE_RESULT
    for i, catcher in enumerate(_objects(spec.get("Catch"))):
        if "Assign" in catcher:
            yield f"Catch[{i}].Assign", _dynamic_values(catcher["Assign"]), BEFORE_RESULT


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dynamic_values(template: Any) -> list[str]:
    """The path and intrinsic strings of a Payload Template (values of ``.$`` fields)."""
    out: list[str] = []
    if isinstance(template, dict):
        for key, value in template.items():
            if isinstance(key, str) and key.endswith(".$") and isinstance(value, str):
                out.append(value)
            else:
                out += _dynamic_values(value)
    elif isinstance(template, list):
        for value in template:
            out += _dynamic_values(value)
    return out


def _rule_paths(rule: dict[str, Any]) -> Iterator[str]:
    for key, value in rule.items():
        if key in ("And", "Or") and isinstance(value, list):
            for child in _objects(value):
                yield from _rule_paths(child)
        elif key == "Not" and isinstance(value, dict):
            yield from _rule_paths(value)
        elif (key in _RULE_PATHS or key.endswith("Path")) and isinstance(value, str):
            yield value


# -- what one value reads --------------------------------------------------------------------
def _check_value(
    where: str,
    value: Any,
    jsonata: bool,
    allowed: frozenset[str],
    visible: frozenset[str],
    problem: Problem,
) -> None:
    if jsonata:
        for text in _strings(value):
            if not is_expression(text):
                continue
            try:
                expr = parse(text)
            except JsonataSyntaxError:
                continue  # reported by the compiler
            # A JSONata expression may read a variable no state assigns (in $exists(...), or
            # one a branch assigned): the service decides when it is evaluated — undefined
            # where the field needs a value is States.QueryEvaluationError (issue 23).
            for field in sorted(expr.states_fields - allowed):
                problem(where, _not_here(field))
        return
    for text in _strings(value):
        for name in sorted(set(_path_variables(text)) - visible):
            problem(where, _unknown(name))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _path_variables(text: str) -> Iterator[str]:
    """The variables a JSONPath path or intrinsic function call reads."""
    if text.startswith("$"):
        try:
            variable = compile_path(text).variable
        except PathSyntaxError:
            return
        if variable is not None:
            yield variable
        return
    try:
        call = parse_intrinsic(text)
    except ValueError:
        return
    yield from _call_variables(call)


def _call_variables(call: Call) -> Iterator[str]:
    for arg in call.args:
        if isinstance(arg, PathArg) and arg.path.variable is not None:
            yield arg.path.variable
        elif isinstance(arg, Call):
            yield from _call_variables(arg)


def _unknown(name: str) -> str:
    return (
        f"unknown variable '${name}': no state of this scope or an enclosing one assigns it"
        " (a variable assigned inside a Parallel branch or Map iteration is not visible"
        " outside it)"
    )


def _not_here(field: str) -> str:
    if field in {"input", "result", "errorOutput", "context"}:
        return f"'$states.{field}' does not exist where this field is evaluated"
    return f"'$states.{field}' is not a field of $states (input, result, errorOutput, context)"

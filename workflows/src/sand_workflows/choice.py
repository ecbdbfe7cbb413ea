"""Choice Rules (spec "Choice State"): compiled once, evaluated on a state's effective input."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import errors
from .errors import StatesError
from .paths import Path, PathNotFound, check_path, compile_path

_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
)


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp with uppercase 'T' and 'Z' (spec "Timestamps"), else None."""
    if not isinstance(value, str) or not _TIMESTAMP.match(value):
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    frac = re.search(r"\.(\d+)", text)
    if frac and len(frac.group(1)) > 6:  # Python parses at most microseconds
        text = text.replace(frac.group(0), "." + frac.group(1)[:6])
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _cmp_string(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda a, b: isinstance(a, str) and isinstance(b, str) and op(a, b)


def _cmp_number(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda a, b: _is_number(a) and _is_number(b) and op(a, b)


def _cmp_timestamp(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        ta, tb = parse_timestamp(a), parse_timestamp(b)
        return ta is not None and tb is not None and op(ta, tb)

    return compare


def _eq(a: Any, b: Any) -> bool:
    return bool(a == b)


def _lt(a: Any, b: Any) -> bool:
    return bool(a < b)


def _gt(a: Any, b: Any) -> bool:
    return bool(a > b)


def _le(a: Any, b: Any) -> bool:
    return bool(a <= b)


def _ge(a: Any, b: Any) -> bool:
    return bool(a >= b)


def _boolean_equals(a: Any, b: Any) -> bool:
    return isinstance(a, bool) and isinstance(b, bool) and a == b


def compile_string_matches(pattern: str) -> re.Pattern[str]:
    """StringMatches: '*' is a wildcard, '\\*' a literal star, '\\\\' a backslash.

    Raises ValueError on an open escape (a backslash before anything else).
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
            if nxt not in ("*", "\\"):
                raise ValueError(f"open escape '\\' at offset {i} in StringMatches '{pattern}'")
            out.append(re.escape(nxt))
            i += 2
            continue
        out.append(".*" if c == "*" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


# operator name -> (comparison, type check of the literal operand)
COMPARISONS: dict[str, tuple[Callable[[Any, Any], bool], Callable[[Any], bool], str]] = {
    "StringEquals": (_cmp_string(_eq), lambda v: isinstance(v, str), "a string"),
    "StringLessThan": (_cmp_string(_lt), lambda v: isinstance(v, str), "a string"),
    "StringGreaterThan": (_cmp_string(_gt), lambda v: isinstance(v, str), "a string"),
    "StringLessThanEquals": (_cmp_string(_le), lambda v: isinstance(v, str), "a string"),
    "StringGreaterThanEquals": (_cmp_string(_ge), lambda v: isinstance(v, str), "a string"),
    "NumericEquals": (_cmp_number(_eq), _is_number, "a number"),
    "NumericLessThan": (_cmp_number(_lt), _is_number, "a number"),
    "NumericGreaterThan": (_cmp_number(_gt), _is_number, "a number"),
    "NumericLessThanEquals": (_cmp_number(_le), _is_number, "a number"),
    "NumericGreaterThanEquals": (_cmp_number(_ge), _is_number, "a number"),
    "BooleanEquals": (_boolean_equals, lambda v: isinstance(v, bool), "a boolean"),
    "TimestampEquals": (
        _cmp_timestamp(_eq),
        lambda v: parse_timestamp(v) is not None,
        "a timestamp",
    ),
    "TimestampLessThan": (
        _cmp_timestamp(_lt),
        lambda v: parse_timestamp(v) is not None,
        "a timestamp",
    ),
    "TimestampGreaterThan": (
        _cmp_timestamp(_gt),
        lambda v: parse_timestamp(v) is not None,
        "a timestamp",
    ),
    "TimestampLessThanEquals": (
        _cmp_timestamp(_le),
        lambda v: parse_timestamp(v) is not None,
        "a timestamp",
    ),
    "TimestampGreaterThanEquals": (
        _cmp_timestamp(_ge),
        lambda v: parse_timestamp(v) is not None,
        "a timestamp",
    ),
}


def _is_type(kind: str) -> Callable[[Any], bool]:
    checks: dict[str, Callable[[Any], bool]] = {
        "IsNull": lambda v: v is None,
        "IsNumeric": _is_number,
        "IsString": lambda v: isinstance(v, str),
        "IsBoolean": lambda v: isinstance(v, bool),
        "IsTimestamp": lambda v: parse_timestamp(v) is not None,
    }
    return checks[kind]


TYPE_TESTS = ("IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp")

OPERATORS: frozenset[str] = frozenset(
    list(COMPARISONS)
    + [name + "Path" for name in COMPARISONS]
    + ["StringMatches"]
    + list(TYPE_TESTS)
)


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled Choice Rule. ``kind`` is And/Or/Not or the comparison operator."""

    kind: str
    variable: Path | None = None
    operand: Any = None  # literal, compiled Path (for *Path), regex (StringMatches), bool (Is*)
    children: tuple[Rule, ...] = ()

    def evaluate(self, data: Any, context: Any) -> bool:
        """True when the rule matches; raises StatesError(States.Runtime) for a missing Variable."""
        if self.kind == "And":
            return all(c.evaluate(data, context) for c in self.children)
        if self.kind == "Or":
            return any(c.evaluate(data, context) for c in self.children)
        if self.kind == "Not":
            return not self.children[0].evaluate(data, context)
        assert self.variable is not None
        if self.kind == "IsPresent":
            return self.variable.exists(data, context) == self.operand
        value = _lookup(self.variable, data, context, "Variable")
        if self.kind in TYPE_TESTS:
            return _is_type(self.kind)(value) == self.operand
        if self.kind == "StringMatches":
            return isinstance(value, str) and self.operand.fullmatch(value) is not None
        if self.kind.endswith("Path"):
            other = _lookup(self.operand, data, context, self.kind)
            return COMPARISONS[self.kind[: -len("Path")]][0](value, other)
        return COMPARISONS[self.kind][0](value, self.operand)


def _lookup(path: Path, data: Any, context: Any, field: str) -> Any:
    try:
        value = path.find(data, context)
    except PathNotFound:
        raise StatesError(
            errors.RUNTIME, f"Choice {field} path '{path.text}' matches nothing in the input"
        ) from None
    return value


def compile_rule(
    spec: dict[str, Any], where: str, problems: list[tuple[str, str]], top: bool
) -> Rule | None:
    """Compile a Choice Rule, appending ``(location, message)`` for each rule it breaks."""
    if not isinstance(spec, dict):
        problems.append((where, "a Choice Rule must be an object"))
        return None
    if not top and "Next" in spec:
        problems.append((where, "a nested Choice Rule must not have 'Next'"))
    # A top-level rule may also Assign variables when it matches (checked by the loader).
    allowed_extra = {"Next", "Comment", "Assign"} if top else {"Comment"}
    if top and "Next" not in spec:
        problems.append((where, "a top-level Choice Rule must have 'Next'"))
    for boolean in ("And", "Or"):
        if boolean in spec:
            _unknown(spec, {boolean} | allowed_extra, where, problems)
            items = spec[boolean]
            if not isinstance(items, list) or not items:
                problems.append((where, f"'{boolean}' must be a non-empty array of Choice Rules"))
                return None
            children = [
                compile_rule(item, f"{where}.{boolean}[{i}]", problems, False)
                for i, item in enumerate(items)
            ]
            if any(c is None for c in children):
                return None
            return Rule(boolean, children=tuple(c for c in children if c is not None))
    if "Not" in spec:
        _unknown(spec, {"Not"} | allowed_extra, where, problems)
        child = compile_rule(spec["Not"], f"{where}.Not", problems, False)
        return None if child is None else Rule("Not", children=(child,))
    ops = [k for k in spec if k in OPERATORS]
    _unknown(spec, {"Variable"} | OPERATORS | allowed_extra, where, problems)
    if "Variable" not in spec:
        problems.append((where, "a data-test Choice Rule must have 'Variable' (or And/Or/Not)"))
        return None
    variable_error = check_path(spec["Variable"])
    if variable_error:
        problems.append((where, f"Variable: {variable_error}"))
        return None
    if len(ops) != 1:
        problems.append(
            (where, f"a Choice Rule must have exactly one comparison operator, found {len(ops)}")
        )
        return None
    op = ops[0]
    value = spec[op]
    variable = compile_path(spec["Variable"])
    if op in TYPE_TESTS:
        if not isinstance(value, bool):
            problems.append((where, f"{op} must be true or false, got {value!r}"))
            return None
        return Rule(op, variable, value)
    if op == "StringMatches":
        if not isinstance(value, str):
            problems.append((where, f"StringMatches must be a string, got {value!r}"))
            return None
        try:
            return Rule(op, variable, compile_string_matches(value))
        except ValueError as exc:
            problems.append((where, str(exc)))
            return None
    if op.endswith("Path"):
        path_error = check_path(value)
        if path_error:
            problems.append((where, f"{op}: {path_error}"))
            return None
        return Rule(op, variable, compile_path(value))
    check, kind = COMPARISONS[op][1], COMPARISONS[op][2]
    if not check(value):
        problems.append((where, f"{op} must be {kind}, got {value!r}"))
        return None
    if isinstance(value, float) and math.isnan(value):
        problems.append((where, f"{op} must not be NaN"))
        return None
    return Rule(op, variable, value)


def _unknown(
    spec: dict[str, Any],
    allowed: set[str] | frozenset[str],
    where: str,
    problems: list[tuple[str, str]],
) -> None:
    for key in spec:
        if key not in allowed:
            problems.append((where, f"unknown field '{key}' in a Choice Rule"))

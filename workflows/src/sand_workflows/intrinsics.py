"""Intrinsic functions (spec "Intrinsic Functions" and Appendix B): parser and evaluator.

``parse_intrinsic`` turns ``States.Format('a {}', $.x)`` into a small syntax tree with a
hand-written tokenizer (quoted strings with ``\\'``, ``\\{``, ``\\}``, ``\\\\`` escapes,
numbers, ``null``, ``true``/``false``, Paths, nested calls). ``check_intrinsic`` adds the
static checks (known function, arity, literal argument types). ``evaluate`` runs a parsed
call against a Payload Template's input; any failure raises
``StatesError('States.IntrinsicFailure', ...)``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import errors
from .errors import StatesError
from .paths import Path, PathNotFound, PathSyntaxError, compile_path


class IntrinsicSyntaxError(ValueError):
    """The string is not a well-formed intrinsic function call."""


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any
    # For string literals: the text split at unescaped "{}" placeholders (States.Format).
    parts: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PathArg:
    path: Path


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Literal | PathArg | Call, ...]


Arg = Literal | PathArg | Call

_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z0-9._]+")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, message: str) -> IntrinsicSyntaxError:
        return IntrinsicSyntaxError(f"{message} at offset {self.i} in '{self.text}'")

    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def call(self) -> Call:
        self.ws()
        m = _NAME.match(self.text, self.i)
        if not m:
            raise self.error("expected a function name")
        name = m.group(0)
        self.i = m.end()
        if self.peek() != "(":
            raise self.error(f"expected '(' right after '{name}'")
        self.i += 1
        args: list[Arg] = []
        self.ws()
        if self.peek() == ")":
            self.i += 1
            return Call(name, ())
        while True:
            args.append(self.arg())
            self.ws()
            c = self.peek()
            self.i += 1
            if c == ",":
                continue
            if c == ")":
                return Call(name, tuple(args))
            self.i -= 1
            raise self.error("expected ',' or ')'")

    def arg(self) -> Arg:
        self.ws()
        c = self.peek()
        if c == "'":
            return self.string()
        if c == "$":
            return self.path()
        if c == "-" or c.isdigit():
            m = _NUMBER.match(self.text, self.i)
            if not m:
                raise self.error("malformed number")
            self.i = m.end()
            raw = m.group(0)
            return Literal(float(raw) if (m.group(1) or m.group(2)) else int(raw))
        for word, value in (("null", None), ("true", True), ("false", False)):
            end = self.i + len(word)
            if self.text.startswith(word, self.i) and (
                end >= len(self.text) or not (self.text[end].isalnum() or self.text[end] in "._(")
            ):
                self.i = end
                return Literal(value)
        if c and (c.isalpha() or c == "_"):
            return self.call()
        raise self.error("expected an argument")

    def string(self) -> Literal:
        self.i += 1  # opening quote
        parts: list[str] = []
        current: list[str] = []
        while True:
            if self.i >= len(self.text):
                raise self.error("unterminated string")
            c = self.text[self.i]
            if c == "\\":
                nxt = self.text[self.i + 1] if self.i + 1 < len(self.text) else ""
                if nxt not in ("'", "{", "}", "\\"):
                    raise self.error("open escape '\\' (only \\' \\{ \\} \\\\ are allowed)")
                current.append(nxt)
                self.i += 2
                continue
            if c == "'":
                self.i += 1
                break
            if c == "{":
                if self.text.startswith("{}", self.i):
                    parts.append("".join(current))
                    current = []
                    self.i += 2
                    continue
                raise self.error("unescaped '{' (write \\{ for a literal brace)")
            if c == "}":
                raise self.error("unescaped '}' (write \\} for a literal brace)")
            current.append(c)
            self.i += 1
        parts.append("".join(current))
        return Literal("{}".join(parts), tuple(parts))

    def path(self) -> PathArg:
        start = self.i
        depth = 0
        quote = ""
        while self.i < len(self.text):
            c = self.text[self.i]
            if quote:
                if c == "\\":
                    self.i += 2
                    continue
                if c == quote:
                    quote = ""
            elif c in "'\"" and depth > 0:
                quote = c
            elif c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
            elif c in ",)" and depth == 0:
                break
            self.i += 1
        text = self.text[start : self.i].strip()
        try:
            return PathArg(compile_path(text))
        except PathSyntaxError as exc:
            raise self.error(str(exc)) from None


@functools.lru_cache(maxsize=2048)
def parse_intrinsic(text: str) -> Call:
    """Parse an intrinsic function call; raises IntrinsicSyntaxError."""
    p = _Parser(text)
    call = p.call()
    p.ws()
    if p.i != len(text):
        raise p.error("unexpected text after the closing ')'")
    return call


# name -> (min args, max args or None for unbounded)
ARITY: dict[str, tuple[int, int | None]] = {
    "States.Format": (1, None),
    "States.StringToJson": (1, 1),
    "States.JsonToString": (1, 1),
    "States.Array": (0, None),
    "States.ArrayPartition": (2, 2),
    "States.ArrayContains": (2, 2),
    "States.ArrayRange": (3, 3),
    "States.ArrayGetItem": (2, 2),
    "States.ArrayLength": (1, 1),
    "States.ArrayUnique": (1, 1),
    "States.Base64Encode": (1, 1),
    "States.Base64Decode": (1, 1),
    "States.Hash": (2, 2),
    "States.JsonMerge": (3, 3),
    "States.MathRandom": (2, 3),
    "States.MathAdd": (2, 2),
    "States.StringSplit": (2, 2),
    "States.UUID": (0, 0),
}

HASH_ALGORITHMS = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
}


def check_intrinsic(text: str) -> list[str]:
    """Every static problem of an intrinsic call: syntax, unknown function, arity, literals."""
    try:
        call = parse_intrinsic(text)
    except IntrinsicSyntaxError as exc:
        return [str(exc)]
    out: list[str] = []
    _check_call(call, out)
    return out


def _check_call(call: Call, out: list[str]) -> None:
    arity = ARITY.get(call.name)
    if arity is None:
        out.append(f"unknown intrinsic function '{call.name}'")
    else:
        low, high = arity
        n = len(call.args)
        if n < low or (high is not None and n > high):
            want = (
                f"{low}"
                if low == high
                else (f"at least {low}" if high is None else f"{low} to {high}")
            )
            out.append(f"{call.name} takes {want} argument(s), got {n}")
        elif call.name == "States.Format":
            first = call.args[0]
            if isinstance(first, Literal) and first.parts is not None:
                holes = len(first.parts) - 1
                if holes != n - 1:
                    out.append(
                        f"States.Format template has {holes} placeholder(s)"
                        f" but {n - 1} value argument(s)"
                    )
            elif isinstance(first, Literal):
                out.append("States.Format: the first argument must be a string")
        elif call.name == "States.JsonToString" and not isinstance(call.args[0], PathArg):
            out.append("States.JsonToString: the argument must be a Path")
        elif call.name == "States.Hash":
            algo = call.args[1]
            if isinstance(algo, Literal) and algo.value not in HASH_ALGORITHMS:
                out.append(
                    f"States.Hash: algorithm must be one of {', '.join(HASH_ALGORITHMS)},"
                    f" got {algo.value!r}"
                )
        elif call.name == "States.JsonMerge":
            flag = call.args[2]
            if isinstance(flag, Literal) and flag.value is not False:
                out.append("States.JsonMerge: the third argument (deep merge) must be false")
    for arg in call.args:
        if isinstance(arg, Call):
            _check_call(arg, out)


def evaluate(call: Call, data: Any, context: Any) -> Any:
    """Run ``call`` with Paths applied to ``data`` / ``context`` ($$).

    Raises StatesError(States.IntrinsicFailure) on any failure.
    """
    impl = _FUNCTIONS.get(call.name)
    if impl is None:
        raise _fail(f"unknown intrinsic function '{call.name}'")
    low, high = ARITY[call.name]
    if len(call.args) < low or (high is not None and len(call.args) > high):
        raise _fail(f"{call.name}: wrong number of arguments ({len(call.args)})")
    if call.name == "States.Format":
        return _format(call, data, context)
    values = [_value(a, data, context) for a in call.args]
    return impl(call.name, values)


def _value(arg: Arg, data: Any, context: Any) -> Any:
    if isinstance(arg, Literal):
        return arg.value
    if isinstance(arg, PathArg):
        try:
            return arg.path.find(data, context)
        except PathNotFound as exc:
            raise _fail(str(exc)) from None
    return evaluate(arg, data, context)


def _fail(message: str) -> StatesError:
    return StatesError(errors.INTRINSIC_FAILURE, message)


def _natural(value: Any, fn: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        raise _fail(f"{fn}: an argument must not be an object or an array")
    return json.dumps(value)


def _format(call: Call, data: Any, context: Any) -> str:
    first = call.args[0]
    values = [_value(a, data, context) for a in call.args[1:]]
    if isinstance(first, Literal) and first.parts is not None:
        parts: list[str] = list(first.parts)
    else:
        template = _value(first, data, context)
        if not isinstance(template, str):
            raise _fail("States.Format: the template must be a string")
        parts = template.split("{}")
    if len(parts) - 1 != len(values):
        raise _fail(
            f"States.Format: template has {len(parts) - 1} placeholder(s)"
            f" but {len(values)} value(s)"
        )
    out = [parts[0]]
    for value, part in zip(values, parts[1:], strict=True):
        out.append(_natural(value, "States.Format"))
        out.append(part)
    return "".join(out)


def _int(value: Any, fn: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"{fn}: {what} must be an integer, got {json.dumps(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise _fail(f"{fn}: {what} must be an integer, got {value}")
        return int(value)
    return value


def _array(value: Any, fn: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(f"{fn}: the first argument must be an array, got {json.dumps(value)}")
    return value


def _string(value: Any, fn: str) -> str:
    if not isinstance(value, str):
        raise _fail(f"{fn}: the argument must be a string, got {json.dumps(value)}")
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _string_to_json(fn: str, v: list[Any]) -> Any:
    text = _string(v[0], fn)
    if not text.strip():
        return None  # as the service does: an empty or blank string parses to null
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _fail(f"{fn}: not JSON: {exc}") from None


def _json_to_string(fn: str, v: list[Any]) -> str:
    return json.dumps(v[0], separators=(",", ":"), ensure_ascii=False)


def _array_partition(fn: str, v: list[Any]) -> list[list[Any]]:
    items = _array(v[0], fn)
    size = _int(v[1], fn, "the chunk size")
    if size <= 0:
        raise _fail(f"{fn}: the chunk size must be a positive integer, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]


def _array_contains(fn: str, v: list[Any]) -> bool:
    items = _array(v[0], fn)
    needle = _canonical(v[1])
    return any(_canonical(x) == needle for x in items)


def _array_range(fn: str, v: list[Any]) -> list[int]:
    start = _int(v[0], fn, "the start")
    end = _int(v[1], fn, "the end")
    step = _int(v[2], fn, "the step")
    if step == 0:
        raise _fail(f"{fn}: the step must not be 0")
    out = list(range(start, end + (1 if step > 0 else -1), step))
    if len(out) > 1000:
        raise _fail(f"{fn}: the range has {len(out)} items, more than 1000")
    return out


def _array_get_item(fn: str, v: list[Any]) -> Any:
    items = _array(v[0], fn)
    index = _int(v[1], fn, "the index")
    if not 0 <= index < len(items):
        raise _fail(f"{fn}: index {index} is out of range for an array of {len(items)}")
    return items[index]


def _array_length(fn: str, v: list[Any]) -> int:
    return len(_array(v[0], fn))


def _array_unique(fn: str, v: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for item in _array(v[0], fn):
        key = _canonical(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _b64encode(fn: str, v: list[Any]) -> str:
    text = _string(v[0], fn)
    if len(text) > 10000:
        raise _fail(f"{fn}: input longer than 10000 characters")
    return base64.b64encode(text.encode()).decode("ascii")


def _b64decode(fn: str, v: list[Any]) -> str:
    text = _string(v[0], fn)
    if len(text) > 10000:
        raise _fail(f"{fn}: input longer than 10000 characters")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise _fail(f"{fn}: not valid Base64 of UTF-8 text: {exc}") from None


def _hash(fn: str, v: list[Any]) -> str:
    data = _string(v[0], fn)
    if len(data) > 10000:
        raise _fail(f"{fn}: input longer than 10000 characters")
    algo = HASH_ALGORITHMS.get(v[1]) if isinstance(v[1], str) else None
    if algo is None:
        raise _fail(
            f"{fn}: algorithm must be one of {', '.join(HASH_ALGORITHMS)}, got {json.dumps(v[1])}"
        )
    return hashlib.new(algo, data.encode()).hexdigest()


def _json_merge(fn: str, v: list[Any]) -> dict[str, Any]:
    a, b, deep = v
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise _fail(f"{fn}: the first two arguments must be objects")
    if deep is not False:
        raise _fail(f"{fn}: only shallow merge is supported; the third argument must be false")
    return {**a, **b}


def _math_random(fn: str, v: list[Any]) -> int:
    start = _int(v[0], fn, "the start")
    end = _int(v[1], fn, "the end")
    if end < start:
        raise _fail(f"{fn}: the end {end} is below the start {start}")
    rng = random.Random(_int(v[2], fn, "the seed")) if len(v) == 3 else random
    return rng.randint(start, end)


def _math_add(fn: str, v: list[Any]) -> int:
    return _int(v[0], fn, "the first value") + _int(v[1], fn, "the second value")


def _string_split(fn: str, v: list[Any]) -> list[str]:
    text = _string(v[0], fn)
    delimiters = _string(v[1], fn)
    if not delimiters:
        raise _fail(f"{fn}: the delimiter must not be empty")
    pieces = re.split("[" + re.escape(delimiters) + "]", text)
    return [p for p in pieces if p]


def _uuid(fn: str, v: list[Any]) -> str:
    return str(uuid.uuid4())


def _array_fn(fn: str, v: list[Any]) -> list[Any]:
    return list(v)


_FUNCTIONS: dict[str, Callable[[str, list[Any]], Any]] = {
    "States.Format": lambda fn, v: None,  # handled by _format (needs the literal's parts)
    "States.StringToJson": _string_to_json,
    "States.JsonToString": _json_to_string,
    "States.Array": _array_fn,
    "States.ArrayPartition": _array_partition,
    "States.ArrayContains": _array_contains,
    "States.ArrayRange": _array_range,
    "States.ArrayGetItem": _array_get_item,
    "States.ArrayLength": _array_length,
    "States.ArrayUnique": _array_unique,
    "States.Base64Encode": _b64encode,
    "States.Base64Decode": _b64decode,
    "States.Hash": _hash,
    "States.JsonMerge": _json_merge,
    "States.MathRandom": _math_random,
    "States.MathAdd": _math_add,
    "States.StringSplit": _string_split,
    "States.UUID": _uuid,
}

# Shared with the functions JSONata states get ($partition, $range, $hash).
partition = _array_partition
range_of = _array_range
hash_value = _hash

__all__ = [
    "ARITY",
    "Call",
    "IntrinsicSyntaxError",
    "Literal",
    "PathArg",
    "PathSyntaxError",
    "check_intrinsic",
    "evaluate",
    "hash_value",
    "parse_intrinsic",
    "partition",
    "range_of",
]

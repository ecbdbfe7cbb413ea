"""JSONata as the query language of a state (``QueryLanguage: JSONata``, decision 0020).

A JSONata state's fields hold JSON values in which a string ``"{% expr %}"`` is a JSONata
expression; every other value is taken literally. ``compile_template`` turns such a value
into a template whose expressions are parsed once; ``evaluate_template`` fills it in with
the reserved ``$states`` (input, result, errorOutput, context) and the workflow variables
bound. Any failure at run time is ``States.QueryEvaluationError`` naming the state and
the field.

The expressions are evaluated by ``jsonata-python`` (a port of the reference
implementation's 2.x line, kept in step with the JSONata test suite); SAND adds the
functions Step Functions adds: ``$partition``, ``$range``, ``$hash``, ``$random``,
``$uuid`` and ``$parse``. ``$eval`` is refused, as on Step Functions.
"""

from __future__ import annotations

import functools
import importlib
import json
import random
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import errors
from .errors import StatesError
from .intrinsics import hash_value, partition, range_of

# How long one expression may run, and how deep it may recurse: a definition is tenant
# input, and an endless recursion must fail the state, not hang the instance.
EVALUATION_TIMEOUT_MS = 5_000
MAX_RECURSION_DEPTH = 500
_OPEN, _CLOSE = "{%", "%}"
# The names of $states; which of them a field may read is checked at validation.
STATES_FIELDS = ("input", "result", "errorOutput", "context")
AWS_FUNCTIONS = ("partition", "range", "hash", "random", "uuid", "parse")
FORBIDDEN_FUNCTIONS = ("eval",)


class _OnFirstUse:
    """Stands for a module of jsonata-python until code here first reads one of its names:
    then imports it and puts the module in its place. jsonata-python weighs ~5 MB in a
    process; a grain worker whose workflows hold no JSONata never loads it (decision 0025).
    """

    def __init__(self, module: str, alias: str) -> None:
        self._module = module
        self._alias = alias

    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module(self._module)
        globals()[self._alias] = module
        return getattr(module, name)


if TYPE_CHECKING:
    import jsonata
    from jsonata import jexception, utils
else:
    jsonata = _OnFirstUse("jsonata", "jsonata")
    jexception = _OnFirstUse("jsonata.jexception", "jexception")
    utils = _OnFirstUse("jsonata.utils", "utils")


class JsonataSyntaxError(ValueError):
    """A ``{% %}`` string is not a JSONata expression."""


@dataclass(frozen=True, slots=True, eq=False)
class Expression:
    """One parsed ``{% ... %}`` expression; ``text`` is what is between the braces."""

    text: str
    variables: frozenset[str]  # the free $names it reads (functions and $states excluded)
    states_fields: frozenset[str]  # the $states.<field>s it reads

    def evaluate(self, bindings: Mapping[str, Any]) -> Any:
        """The value (``utils.Utils.NULL_VALUE`` for JSON null, None for undefined)."""
        # A fresh frame per evaluation: its Timebox starts the clock and the depth count
        # now (bounds set on the parsed expression would count from when it was parsed).
        frame = jsonata.Jsonata.Frame(None)
        frame.set_runtime_bounds(EVALUATION_TIMEOUT_MS, MAX_RECURSION_DEPTH)
        for name, value in bindings.items():
            frame.bind(name, value)
        return _compiled(self.text).evaluate(None, frame)


@dataclass(frozen=True, slots=True, eq=False)
class Template:
    """A field of a JSONata state, compiled: a JSON value with Expressions in it."""

    value: Any
    literal: bool = False  # no expression in it: the value is the field's value

    @classmethod
    def of(cls, value: Any) -> Template:
        """Compile a field's value (already checked by ``check_template``)."""
        compiled = compile_template(value)
        return cls(compiled, literal=next(expressions(compiled), None) is None)

    def evaluate(
        self, state: str, field: str, states: Mapping[str, Any], variables: Mapping[str, Any]
    ) -> Any:
        if self.literal:
            return self.value
        return evaluate_template(self.value, state, field, states, variables)

    def expressions(self) -> Iterator[Expression]:
        return expressions(self.value)


def is_expression(value: Any) -> bool:
    """Whether ``value`` is a ``{% ... %}`` string."""
    return (
        isinstance(value, str)
        and value.startswith(_OPEN)
        and value.endswith(_CLOSE)
        and len(value) >= 4
    )


def parse(value: str) -> Expression:
    """Parse a ``{% ... %}`` string; raises JsonataSyntaxError."""
    text = value[len(_OPEN) : -len(_CLOSE)].strip()
    if not text:
        raise JsonataSyntaxError("the expression between '{%' and '%}' is empty")
    try:
        compiled = jsonata.Jsonata(text)
    except jexception.JException as exc:
        raise JsonataSyntaxError(f"not a JSONata expression: {_message(exc)}") from None
    free, functions, states = _free_names(compiled.ast)
    forbidden = sorted(f for f in functions if f in FORBIDDEN_FUNCTIONS)
    if forbidden:
        raise JsonataSyntaxError(f"the function ${forbidden[0]} is not supported")
    return Expression(text, frozenset(free), frozenset(states))


def compile_template(value: Any) -> Any:
    """``value`` with each ``{% %}`` string replaced by its Expression (already checked)."""
    if is_expression(value):
        return parse(value)
    if isinstance(value, dict):
        return {k: compile_template(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compile_template(v) for v in value]
    return value


def expressions(template: Any) -> Iterator[Expression]:
    """Every Expression in a compiled template."""
    if isinstance(template, Expression):
        yield template
    elif isinstance(template, dict):
        for v in template.values():
            yield from expressions(v)
    elif isinstance(template, list):
        for v in template:
            yield from expressions(v)


def check_template(value: Any, where: str, problem: Callable[[str, str], None]) -> None:
    """Report each ``{% %}`` string of ``value`` that does not parse (by its location)."""
    if isinstance(value, str):
        if value.startswith(_OPEN) and not is_expression(value):
            problem(where, "an expression must end with '%}'")
        elif is_expression(value):
            try:
                parse(value)
            except JsonataSyntaxError as exc:
                problem(where, str(exc))
    elif isinstance(value, dict):
        for k, v in value.items():
            check_template(v, f"{where}.{k}", problem)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_template(v, f"{where}[{i}]", problem)


def evaluate_template(
    template: Any, state: str, field: str, states: Mapping[str, Any], variables: Mapping[str, Any]
) -> Any:
    """The JSON value of ``template`` with ``$states`` and the variables bound.

    Raises StatesError(States.QueryEvaluationError) when an expression fails or yields
    no value (JSONata's *undefined*) where the field needs one.
    """
    try:
        # Converted once for every expression of the field (the input may be large).
        bindings: dict[str, Any] = {name: _to_jsonata(v) for name, v in variables.items()}
        bindings["states"] = _to_jsonata(dict(states))
    except RecursionError:
        raise StatesError(
            errors.QUERY_EVALUATION_ERROR,
            f"state '{state}' field '{field}': the input or variables are nested too deeply",
        ) from None
    bindings.update(_functions())
    return _fill(template, state, field, bindings)


def _fill(template: Any, state: str, field: str, bindings: Mapping[str, Any]) -> Any:
    if isinstance(template, Expression):
        return _evaluate(template, state, field, bindings)
    if isinstance(template, dict):
        return {k: _fill(v, state, f"{field}.{k}", bindings) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, state, f"{field}[{i}]", bindings) for i, v in enumerate(template)]
    return template


def _evaluate(expr: Expression, state: str, field: str, bindings: Mapping[str, Any]) -> Any:
    try:
        value = expr.evaluate(bindings)
        if value is None:
            unset = sorted(name for name in expr.variables if name not in bindings)
            why = "the expression returned no value (undefined)"
            if unset:
                why += "; " + ", ".join(f"'${n}'" for n in unset) + " has no value here"
            raise StatesError(errors.QUERY_EVALUATION_ERROR, why)
        return _from_jsonata(value)
    except StatesError as exc:  # raised by one of the Step Functions functions, or above
        raise _query_error(state, field, expr, exc.cause) from None
    except jexception.JException as exc:
        raise _query_error(state, field, expr, _message(exc)) from None
    except RecursionError:
        raise _query_error(state, field, expr, "the expression recursed too deeply") from None
    except Exception as exc:  # jsonata-python lets some errors out raw (e.g. ValueError)
        raise _query_error(state, field, expr, f"{type(exc).__name__}: {exc}") from None


def _query_error(state: str, field: str, expr: Expression, why: str) -> StatesError:
    return StatesError(
        errors.QUERY_EVALUATION_ERROR,
        f"state '{state}' field '{field}': the JSONata expression '{expr.text}' failed: {why}",
    )


def _message(exc: jexception.JException) -> str:
    return str(getattr(exc, "message", None) or exc)


# -- values between JSON and jsonata-python -------------------------------------------------
# jsonata-python tells JSON null (Utils.NULL_VALUE) from undefined (None) only when its
# input says so: nulls are converted on the way in, and back on the way out.
def _to_jsonata(value: Any) -> Any:
    if value is None:
        return utils.Utils.NULL_VALUE
    if isinstance(value, dict):
        return {k: _to_jsonata(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_jsonata(v) for v in value]
    return value


def _from_jsonata(value: Any) -> Any:
    if value is utils.Utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {k: _from_jsonata(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_from_jsonata(v) for v in value if v is not None]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, bool | int | float | str):
        return value
    raise StatesError(
        errors.QUERY_EVALUATION_ERROR,
        f"a JSONata expression returned {type(value).__name__}, which is not a JSON value",
    )


# -- parsed expressions, one per thread (an expression object is not thread-safe) ----------
_local = threading.local()


def _compiled(text: str) -> jsonata.Jsonata:
    cache: dict[str, jsonata.Jsonata] | None = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = {}
    found = cache.get(text)
    if found is None:
        found = jsonata.Jsonata(text)
        found.set_output_convert_nulls(False)
        found.set_validate_input(False)
        if len(cache) > 4096:
            cache.clear()
        cache[text] = found
    return found


# -- the functions Step Functions adds -------------------------------------------------------
def _partition(array: Any, size: Any) -> Any:
    return partition("$partition", [_from_jsonata(array), size])


def _range(start: Any, end: Any, step: Any) -> Any:
    return range_of("$range", [start, end, step])


def _hash(data: Any, algorithm: Any) -> Any:
    return hash_value("$hash", [_from_jsonata(data), algorithm])


def _random(seed: Any = None) -> float:
    if seed is None:
        return random.random()
    return random.Random(seed).random()


def _uuid() -> str:
    return str(uuid.uuid4())


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        raise StatesError(errors.QUERY_EVALUATION_ERROR, "$parse: the argument must be a string")
    if not text.strip():
        return utils.Utils.NULL_VALUE
    try:
        return _to_jsonata(json.loads(text))
    except ValueError as exc:
        raise StatesError(errors.QUERY_EVALUATION_ERROR, f"$parse: not JSON: {exc}") from None


@functools.cache
def _functions() -> dict[str, Any]:
    return {
        "partition": jsonata.Jsonata.JLambda(_partition),
        "range": jsonata.Jsonata.JLambda(_range),
        "hash": jsonata.Jsonata.JLambda(_hash),
        "random": jsonata.Jsonata.JLambda(_random),
        "uuid": jsonata.Jsonata.JLambda(_uuid),
        "parse": jsonata.Jsonata.JLambda(_parse),
    }


# -- static analysis: which $names an expression reads ----------------------------------------
def _free_names(ast: Any) -> tuple[set[str], set[str], set[str]]:
    """(free variables, called function names, $states fields) of a parsed expression.

    A name bound inside the expression (``$x := ...``, a lambda's parameter) is not free.
    Built-in functions and ``$states`` are reported apart from variables.
    """
    free: set[str] = set()
    functions: set[str] = set()
    states: set[str] = set()
    _walk(ast, frozenset(), free, functions, states)
    frame = jsonata.Jsonata.static_frame
    builtins = set(frame.bindings) if frame is not None else set()
    free -= builtins | set(AWS_FUNCTIONS) | {"states", ""}
    return free, functions, states


def _walk(
    node: Any,
    bound: frozenset[str],
    free: set[str],
    functions: set[str],
    states: set[str],
) -> None:
    if node is None:
        return
    if isinstance(node, list | tuple):
        for item in node:
            _walk(item, bound, free, functions, states)
        return
    if not hasattr(node, "type"):
        return
    kind = getattr(node, "type", None)
    if kind == "variable":
        name = getattr(node, "value", "") or ""
        if name not in bound:
            free.add(name)
    elif kind == "function" or kind == "partial":
        proc = getattr(node, "procedure", None)
        if getattr(proc, "type", None) == "variable":
            functions.add(getattr(proc, "value", "") or "")
    elif kind == "lambda":
        params = {getattr(a, "value", "") for a in getattr(node, "arguments", None) or ()}
        _walk(getattr(node, "body", None), bound | params, free, functions, states)
        return
    elif kind == "block":
        # A block's bindings are visible to the expressions after them.
        inner = set(bound)
        for expr in getattr(node, "expressions", None) or ():
            if getattr(expr, "type", None) == "bind":
                # Bound before its value is walked: a function may call itself by name.
                inner.add(getattr(getattr(expr, "lhs", None), "value", ""))
                _walk(getattr(expr, "rhs", None), frozenset(inner), free, functions, states)
            else:
                _walk(expr, frozenset(inner), free, functions, states)
        return
    elif kind == "bind":
        _walk(getattr(node, "rhs", None), bound, free, functions, states)
        return
    if kind == "path":
        steps = getattr(node, "steps", None) or []
        if (
            len(steps) >= 2
            and getattr(steps[0], "type", None) == "variable"
            and getattr(steps[0], "value", None) == "states"
            and getattr(steps[1], "type", None) == "name"
        ):
            states.add(getattr(steps[1], "value", ""))
    for attr in (
        "lhs",
        "rhs",
        "expression",
        "expressions",
        "steps",
        "stages",
        "predicate",
        "expr",
        "procedure",
        "arguments",
        "condition",
        "then",
        "_else",
        "body",
        "update",
        "delete",
        "pattern",
        "group",
        "terms",
        "rhs_terms",
        "lhs_object",
        "rhs_object",
        "focus",
        "index",
        "tuple",
        "seeking_parent",
    ):
        child = getattr(node, attr, None)
        if child is None or isinstance(child, str | int | float | bool):
            continue
        if attr == "group" and hasattr(child, "lhs_object"):
            for pair in child.lhs_object or ():
                _walk(pair, bound, free, functions, states)
            continue
        if attr == "lhs" and isinstance(child, list):
            for pair in child:
                _walk(pair, bound, free, functions, states)
            continue
        _walk(child, bound, free, functions, states)

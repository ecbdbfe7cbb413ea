"""JSONPath for the States Language: Paths, Reference Paths and writing a result into a document.

A *Reference Path* (spec "Reference Paths") identifies exactly one node: ``$``, ``.name``,
``['name']`` and ``[index]`` steps only, with ``\\`` escaping the next character of a
dotted name. This module parses those itself (they are also what ResultPath writes to),
and hands every other Path (wildcards, slices, unions, filters, recursive descent) to
``jsonpath-ng``; such a Path always yields a JSON array of its matches (spec "Using
InputPath, ..."): zero matches give ``[]``.

Compiled paths are cached; all functions are pure and thread-safe.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Step = str | int

_NOT_IN_REFERENCE = set("@,:?*")


class PathNotFound(Exception):
    """A Path matched nothing in the document it was applied to."""


class PathWriteError(Exception):
    """A Reference Path cannot be written into the document (e.g. a field of a string)."""


class PathSyntaxError(ValueError):
    """A string is not a valid Path or Reference Path."""


def _parse_reference_steps(text: str) -> tuple[Step, ...]:
    """Parse the part after the leading ``$`` into steps, or raise PathSyntaxError."""
    steps: list[Step] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ".":
            i += 1
            name: list[str] = []
            while i < n and text[i] not in ".[":
                ch = text[i]
                if ch == "\\":
                    if i + 1 >= n:
                        raise PathSyntaxError("ends with an open escape '\\'")
                    name.append(text[i + 1])
                    i += 2
                    continue
                if ch in _NOT_IN_REFERENCE or ch.isspace():
                    raise PathSyntaxError(f"'{ch}' is not allowed in a reference path")
                name.append(ch)
                i += 1
            if not name:
                raise PathSyntaxError("empty field name (recursive descent '..' is not allowed)")
            steps.append("".join(name))
        elif c == "[":
            end = _bracket_end(text, i)
            inner = text[i + 1 : end].strip()
            i = end + 1
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                body = inner[1:-1]
                out: list[str] = []
                j = 0
                while j < len(body):
                    if body[j] == "\\" and j + 1 < len(body):
                        out.append(body[j + 1])
                        j += 2
                        continue
                    if body[j] == inner[0]:
                        raise PathSyntaxError("unescaped quote inside ['...']")
                    out.append(body[j])
                    j += 1
                steps.append("".join(out))
            else:
                try:
                    index = int(inner)
                except ValueError:
                    raise PathSyntaxError(
                        f"'[{inner}]' is not a single index or quoted name"
                    ) from None
                steps.append(index)
        else:
            raise PathSyntaxError(f"unexpected '{c}' at offset {i + 1}")
    return tuple(steps)


def _bracket_end(text: str, start: int) -> int:
    for i in _unquoted(text, start + 1):
        if text[i] == "]":
            return i
    raise PathSyntaxError("unclosed '['")


def _unquoted(text: str, start: int = 0) -> Iterator[int]:
    """The offsets, from ``start`` on, of the characters of ``text`` outside quoted names
    (``'...'`` or ``"..."``, in which a backslash escapes the next character), the quotes
    left out: a ``]`` or ``,`` inside a name neither closes a bracket nor splits a union."""
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            yield i
        i += 1


@dataclass(frozen=True, slots=True)
class Path:
    """A compiled Path. ``context`` is true for ``$$...`` (applies to the context object);
    ``variable`` names the workflow variable a ``$name...`` path applies to.

    ``steps`` is set for a definite (reference) path, ``query`` for any other.
    """

    text: str
    context: bool
    steps: tuple[Step, ...] | None
    query: Any = None
    # A union such as $.a[0,1].b is compiled as its alternatives ($.a[0].b, $.a[1].b):
    # jsonpath-ng does not parse bracket unions.
    alternatives: tuple[Path, ...] = ()
    variable: str | None = None

    @property
    def is_reference(self) -> bool:
        return self.steps is not None

    def find(self, data: Any, context: Any = None) -> Any:
        """The value this Path selects; raises PathNotFound when it selects nothing."""
        doc = context if self.context else data
        if self.variable is not None:
            # The variables travel on the context object (dataflow.ContextObject).
            variables = getattr(context, "variables", None) or {}
            if self.variable not in variables:
                raise PathNotFound(
                    f"path '{self.text}': variable '${self.variable}' has no value here"
                )
            doc = variables[self.variable]
        if self.steps is not None:
            return get_steps(doc, self.steps, self.text)
        if self.alternatives:
            out: list[Any] = []
            for alt in self.alternatives:
                if alt.steps is None:
                    out.extend(alt.find(data, context))
                elif alt.exists(data, context):
                    out.append(alt.find(data, context))
            return out
        return [m.value for m in self.query.find(doc)]

    def exists(self, data: Any, context: Any = None) -> bool:
        try:
            self.find(data, context)
        except PathNotFound:
            return False
        return True


def get_steps(doc: Any, steps: tuple[Step, ...], text: str) -> Any:
    node = doc
    for step in steps:
        if isinstance(step, int):
            if isinstance(node, list) and -len(node) <= step < len(node):
                node = node[step]
                continue
        elif isinstance(node, dict) and step in node:
            node = node[step]
            continue
        raise PathNotFound(f"path '{text}' matches nothing")
    return node


@functools.lru_cache(maxsize=4096)
def compile_path(text: str) -> Path:
    """Compile a Path (``$...`` or ``$$...``); raises PathSyntaxError."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathSyntaxError(f"'{text}' is not a path: it must begin with '$'")
    context = text.startswith("$$")
    variable, body = _split_variable(text)
    try:
        return Path(text, context, _parse_reference_steps(body), variable=variable)
    except PathSyntaxError:
        pass
    union = _split_union(text)
    if union is not None:
        alternatives = tuple(compile_path(alt) for alt in union)
        return Path(text, context, None, None, alternatives, variable=variable)
    # jsonpath-ng (and its parser generator) is loaded only by the workflows that need it:
    # a grain worker whose paths are all references never holds it (decision 0025)
    from jsonpath_ng.ext import parse as jsonpath_parse

    try:
        query = jsonpath_parse("$" + body)
    except Exception as exc:  # jsonpath-ng raises bare Exception subclasses of its own
        raise PathSyntaxError(f"'{text}' is not a valid JSONPath: {exc}") from None
    return Path(text, context, None, query, variable=variable)


def _split_variable(text: str) -> tuple[str | None, str]:
    """``$name.rest`` -> ``("name", ".rest")``; ``$.a`` -> ``(None, ".a")``; ``$$.a`` ->
    ``(None, ".a")``. Raises PathSyntaxError for a variable name that breaks the rule."""
    if text.startswith("$$"):
        return None, text[2:]
    end = 1
    while end < len(text) and text[end] not in ".[":
        end += 1
    if end == 1:
        return None, text[1:]
    name = text[1:end]
    if not name.isidentifier():
        raise PathSyntaxError(f"'{text}': '${name}' is not a valid variable name")
    return name, text[end:]


def _split_union(text: str) -> list[str] | None:
    """``$.a[0,1].b`` -> ``["$.a[0].b", "$.a[1].b"]``; None when there is no bracket union."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "[":
            try:
                end = _bracket_end(text, i)
            except PathSyntaxError:
                return None
            inner = text[i + 1 : end]
            if not inner.lstrip().startswith(("?", "(")):
                parts = _split_top_commas(inner)
                if len(parts) > 1:
                    return [f"{text[:i]}[{p.strip()}]{text[end + 1 :]}" for p in parts]
            i = end + 1
            continue
        i += 1
    return None


def _split_top_commas(inner: str) -> list[str]:
    parts: list[str] = []
    begin = 0
    for i in _unquoted(inner):
        if inner[i] == ",":
            parts.append(inner[begin:i])
            begin = i + 1
    parts.append(inner[begin:])
    return parts


@functools.lru_cache(maxsize=4096)
def compile_reference_path(text: str, allow_context: bool = True) -> Path:
    """Compile a Reference Path; raises PathSyntaxError for anything else."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathSyntaxError(f"'{text}' is not a reference path: it must begin with '$'")
    context = text.startswith("$$")
    if context and not allow_context:
        raise PathSyntaxError(f"'{text}' must not begin with '$$'")
    variable, body = _split_variable(text)
    if variable is not None and not allow_context:
        raise PathSyntaxError(f"'{text}' must not name a variable (it is written, not read)")
    try:
        steps = _parse_reference_steps(body)
    except PathSyntaxError as exc:
        raise PathSyntaxError(f"'{text}' is not a reference path: {exc}") from None
    return Path(text, context, steps, variable=variable)


def check_path(text: Any) -> str | None:
    """None when ``text`` is a valid Path, else why not."""
    try:
        compile_path(text)
    except (PathSyntaxError, TypeError) as exc:
        return str(exc)
    return None


def check_reference_path(text: Any, allow_context: bool = True) -> str | None:
    """None when ``text`` is a valid Reference Path, else why not."""
    try:
        compile_reference_path(text, allow_context)
    except (PathSyntaxError, TypeError) as exc:
        return str(exc)
    return None


def set_at(doc: Any, path: Path, value: Any) -> Any:
    """A copy of ``doc`` with ``value`` written at the Reference Path ``path``.

    Missing intermediate fields are created as objects; an existing field is overwritten.
    Only the nodes along the path are copied. Raises PathWriteError when a step lands on a
    value that is not an object (or an array, for an index in range).
    """
    assert path.steps is not None, "ResultPath is always a reference path"
    return _set(doc, path.steps, value, path.text)


def _set(node: Any, steps: tuple[Step, ...], value: Any, text: str) -> Any:
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    if isinstance(step, int):
        if isinstance(node, list) and -len(node) <= step < len(node):
            copy = list(node)
            copy[step] = _set(node[step], rest, value, text)
            return copy
        raise PathWriteError(
            f"ResultPath '{text}': index [{step}] cannot be written into {json_kind(node)}"
        )
    if not isinstance(node, dict):
        raise PathWriteError(
            f"ResultPath '{text}': field '{step}' cannot be written into {json_kind(node)}"
        )
    copy_d = dict(node)
    copy_d[step] = _set(node.get(step, {}) if step in node else {}, rest, value, text)
    return copy_d


def json_kind(value: Any) -> str:
    """How messages name the kind of a JSON value: ``null``, ``a number``, ``an object``..."""
    kinds: dict[type, str] = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
    }
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return kinds.get(type(value), type(value).__name__)

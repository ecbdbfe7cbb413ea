"""Parsing definition files strictly: a key given twice in one mapping is an error.

PyYAML's ``safe_load`` and Python's ``json.loads`` silently keep the last of two equal
keys, so a state defined twice, or a ``Next`` overridden three lines further down,
would go unnoticed. ASL says the member names of a JSON object should be unique, and
YAML 1.2 requires it. Both functions here raise the error their library raises for
malformed input, located at the second occurrence of the key, so that callers report
it as they report any syntax error: with file, line and column.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from typing import Any, cast

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

_MERGE_TAG = "tag:yaml.org,2002:merge"

# The pure-Python pieces of the json module (stable since Python 2.7, not in typeshed).
_decoder = cast(Any, json.decoder)
_py_make_scanner = cast(Any, json.scanner).py_make_scanner


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with two equal keys (``<<`` merges,
    which are meant to be overridden, are left alone)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    earlier = first_line.get(key)
                except TypeError:  # an unhashable key: the base class says what is wrong
                    continue
                if earlier is not None:
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"duplicate key '{key}' (first given on line {earlier})",
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys; raises ``yaml.YAMLError`` (a
    duplicate: a ``MarkedYAMLError`` whose ``problem_mark`` is the second key)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)


def load_json(text: str) -> Any:
    """``json.loads`` that refuses duplicate member names; raises ``json.JSONDecodeError``
    (a duplicate: located at the second name)."""
    return _UniqueKeyDecoder().decode(text)


class _UniqueKeyDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.parse_object = _object_of_unique_names
        # the C scanner ignores parse_object; the pure-Python one calls it (definition
        # files are small: the speed does not matter)
        self.scan_once = _py_make_scanner(self)


def _object_of_unique_names(
    s_and_end: tuple[str, int],
    strict: bool,
    scan_once: Any,
    object_hook: Any,
    object_pairs_hook: Any,
    memo: Any = None,
) -> tuple[Any, int]:
    """``json.decoder.JSONObject``, then a check that no member name repeats."""
    pairs, end = _decoder.JSONObject(s_and_end, strict, scan_once, None, list, memo)
    if len({name for name, _ in pairs}) != len(pairs):
        _raise_at_duplicate(*s_and_end, strict, scan_once)
    return dict(pairs), end


def _raise_at_duplicate(s: str, pos: int, strict: bool, scan_once: Any) -> None:
    """Walk the members of the object (already known to be well formed) that starts
    before ``pos`` and raise at the first name given twice."""
    skip = _decoder.WHITESPACE.match
    first: dict[str, int] = {}
    while True:
        pos = skip(s, pos).end()
        if s[pos] == "}":
            return
        start = pos
        name, pos = _decoder.scanstring(s, pos + 1, strict)
        if name in first:
            line = s.count("\n", 0, first[name]) + 1
            raise json.JSONDecodeError(
                f"duplicate key '{name}' (first given on line {line})", s, start
            )
        first[name] = start
        pos = skip(s, pos).end() + 1  # the ':'
        _, pos = scan_once(s, skip(s, pos).end())
        pos = skip(s, pos).end()
        if s[pos] == ",":
            pos += 1

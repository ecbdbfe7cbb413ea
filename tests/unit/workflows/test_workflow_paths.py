"""Paths, Reference Paths and ResultPath writes (spec "Paths", "Reference Paths")."""

from __future__ import annotations

import pytest
from sand_workflows.paths import (
    PathNotFound,
    PathSyntaxError,
    PathWriteError,
    check_path,
    check_reference_path,
    compile_path,
    compile_reference_path,
    set_at,
)

DOC = {"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": True}, "my key": 1, "a.b": 2}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$", DOC),
        ("$.foo", 123),
        ("$.bar", ["a", "b", "c"]),
        ("$.car.cdr", True),
        ("$.bar[1]", "b"),
        ("$.bar[-1]", "c"),
        ("$['car']['cdr']", True),
        ("$['my key']", 1),
        ("$.a\\.b", 2),
    ],
)
def test_reference_path_selects_single_node(path: str, value: object) -> None:
    """Spec examples of Reference Paths each select exactly one node."""
    p = compile_path(path)
    assert p.is_reference
    assert p.find(DOC) == value


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$.bar[*]", ["a", "b", "c"]),
        ("$.bar[0,2]", ["a", "c"]),
        ("$.bar[1:]", ["b", "c"]),
        ("$..cdr", [True]),
        ("$.nothing[*]", []),
    ],
)
def test_indefinite_path_yields_array(path: str, value: object) -> None:
    """Spec: a Path that may select several nodes yields an array of them."""
    assert compile_path(path).find(DOC) == value


def test_context_path_applies_to_context_object() -> None:
    """$$ paths read the context object, not the input."""
    assert compile_path("$$.State.Name").find({}, {"State": {"Name": "X"}}) == "X"


def test_missing_field_raises_path_not_found() -> None:
    """A reference path that matches nothing raises PathNotFound."""
    with pytest.raises(PathNotFound):
        compile_path("$.nope").find(DOC)
    with pytest.raises(PathNotFound):
        compile_path("$.bar[7]").find(DOC)


@pytest.mark.parametrize("path", ["$.a[*]", "$.a[0,1]", "$..a", "$.a[?(@.b)]", "$.a[1:2]"])
def test_reference_path_rejects_operators(path: str) -> None:
    """Spec: '@', ',', ':', '?' and wildcards are not allowed in a Reference Path."""
    assert check_reference_path(path) is not None
    with pytest.raises(PathSyntaxError):
        compile_reference_path(path)


@pytest.mark.parametrize("path", ["foo", "", "$.a[", "$.a[?(@.b >]"])
def test_invalid_path_is_reported(path: str) -> None:
    """Strings that are not JSONPath are reported with a reason."""
    assert check_path(path) is not None


def test_result_path_must_not_begin_with_double_dollar() -> None:
    """Spec: ResultPath MUST NOT begin with '$$'."""
    assert check_reference_path("$$.x", allow_context=False) is not None


def test_set_at_overwrites_existing_field() -> None:
    """Spec: ResultPath $.master.detail overwrites the field."""
    raw = {"master": {"detail": [1, 2, 3]}}
    out = set_at(raw, compile_reference_path("$.master.detail"), 6)
    assert out == {"master": {"detail": 6}}
    assert raw == {"master": {"detail": [1, 2, 3]}}, "the input is not mutated"


def test_set_at_creates_intermediate_objects() -> None:
    """Spec: ResultPath builds missing intervening fields."""
    out = set_at({"a": 1}, compile_reference_path("$.b.greeting"), "Hi!")
    assert out == {"a": 1, "b": {"greeting": "Hi!"}}


def test_set_at_into_string_fails() -> None:
    """Spec 'Runtime Errors': ResultPath $.x cannot be applied to the input "foo"."""
    with pytest.raises(PathWriteError):
        set_at("foo", compile_reference_path("$.x"), 1)


def test_set_at_index_out_of_range_fails() -> None:
    """Writing at an index beyond the array is a write failure, not an append."""
    with pytest.raises(PathWriteError):
        set_at({"a": [1]}, compile_reference_path("$.a[3]"), 1)


def test_set_at_root_replaces() -> None:
    """ResultPath $ replaces the whole document."""
    assert set_at({"a": 1}, compile_reference_path("$"), [1]) == [1]

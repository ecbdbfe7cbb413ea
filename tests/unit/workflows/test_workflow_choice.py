"""Choice Rules: compilation problems and evaluation (spec "Choice State")."""

from __future__ import annotations

from typing import Any

import pytest
from sand_workflows.choice import compile_rule, compile_string_matches, parse_timestamp
from sand_workflows.errors import StatesError


def rule(spec: dict[str, Any]) -> Any:
    problems: list[tuple[str, str]] = []
    compiled = compile_rule({**spec, "Next": "X"}, "C", problems, top=True)
    assert problems == []
    return compiled


def problems_of(spec: Any, top: bool = True) -> list[str]:
    found: list[tuple[str, str]] = []
    compile_rule(spec, "C.Choices[0]", found, top)
    return [m for _, m in found]


@pytest.mark.parametrize(
    ("op", "operand", "value", "expected"),
    [
        ("StringEquals", "a", "a", True),
        ("StringEquals", "a", "b", False),
        ("StringLessThan", "b", "a", True),
        ("StringGreaterThan", "a", "b", True),
        ("StringLessThanEquals", "a", "a", True),
        ("StringGreaterThanEquals", "a", "b", True),
        ("NumericEquals", 1, 1.0, True),
        ("NumericLessThan", 1, 0, True),
        ("NumericGreaterThan", 1, 0, False),
        ("NumericLessThanEquals", 1, 1, True),
        ("NumericGreaterThanEquals", 1, 0, False),
        ("BooleanEquals", False, False, True),
        ("BooleanEquals", False, 0, False),
        ("TimestampEquals", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00+01:00", True),
        ("TimestampLessThan", "2020-01-01T00:00:00Z", "2019-12-31T23:59:59.5Z", True),
        ("TimestampGreaterThan", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z", False),
        ("TimestampLessThanEquals", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z", True),
        ("TimestampGreaterThanEquals", "2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z", True),
        ("NumericEquals", 1, "1", False),
        ("StringEquals", "1", 1, False),
        ("TimestampEquals", "2020-01-01T00:00:00Z", "2020-01-01", False),
    ],
)
def test_comparison(op: str, operand: Any, value: Any, expected: bool) -> None:
    """Each operator compares values of its type and is false for other types."""
    assert rule({"Variable": "$.v", op: operand}).evaluate({"v": value}, {}) is expected
    path_rule = rule({"Variable": "$.v", op + "Path": "$.w"})
    assert path_rule.evaluate({"v": value, "w": operand}, {}) is expected


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("foo*.log", "foo23.log", True),
        ("*.log", "zebra.log", True),
        ("foo*.*", "foobar.zebra", True),
        ("a\\*b", "a*b", True),
        ("a\\*b", "aXb", False),
        ("a\\\\*", "a\\anything", True),
        ("x?y", "xzy", False),
        ("line*", "line1\nline2", True),
    ],
)
def test_string_matches(pattern: str, value: str, expected: bool) -> None:
    """'*' matches any run of characters; '\\*' and '\\\\' are literals."""
    assert (compile_string_matches(pattern).fullmatch(value) is not None) is expected


def test_string_matches_open_escape_is_rejected() -> None:
    """Spec: an open escape in StringMatches is an error."""
    with pytest.raises(ValueError):
        compile_string_matches("a\\b")
    assert any(
        "open escape" in m
        for m in problems_of({"Variable": "$.v", "StringMatches": "a\\b", "Next": "X"})
    )


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("IsNull", None, True),
        ("IsNull", 0, False),
        ("IsNumeric", 1.5, True),
        ("IsNumeric", True, False),
        ("IsString", "", True),
        ("IsBoolean", False, True),
        ("IsBoolean", "true", False),
        ("IsTimestamp", "2016-03-14T01:59:00Z", True),
        ("IsTimestamp", "2016-03-14t01:59:00z", False),
    ],
)
def test_type_tests(op: str, value: Any, expected: bool) -> None:
    """Is* operators test the JSON kind; the operand false inverts them."""
    assert rule({"Variable": "$.v", op: True}).evaluate({"v": value}, {}) is expected
    assert rule({"Variable": "$.v", op: False}).evaluate({"v": value}, {}) is not expected


def test_is_present_tolerates_missing_variable() -> None:
    """Spec: IsPresent on a path that matches nothing is false, without error."""
    assert rule({"Variable": "$.v", "IsPresent": True}).evaluate({}, {}) is False
    assert rule({"Variable": "$.v", "IsPresent": False}).evaluate({}, {}) is True


def test_missing_variable_raises_runtime() -> None:
    """Any other operator on a missing Variable fails with States.Runtime."""
    with pytest.raises(StatesError) as info:
        rule({"Variable": "$.v", "IsNull": True}).evaluate({}, {})
    assert info.value.error == "States.Runtime"


def test_boolean_expressions_short_circuit() -> None:
    """And stops at the first false, Or at the first true (spec "Boolean Expression")."""
    r_and = rule(
        {"And": [{"Variable": "$.a", "IsPresent": True}, {"Variable": "$.a", "IsNull": True}]}
    )
    assert r_and.evaluate({}, {}) is False
    r_or = rule(
        {"Or": [{"Variable": "$.a", "IsPresent": False}, {"Variable": "$.a", "IsNull": True}]}
    )
    assert r_or.evaluate({}, {}) is True
    assert rule({"Not": {"Variable": "$.a", "IsPresent": True}}).evaluate({}, {}) is True


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"Variable": "$.v", "StringEquals": "a"}, "must have 'Next'"),
        ({"Variable": "$.v", "Next": "X"}, "exactly one comparison operator, found 0"),
        ({"Variable": "$.v", "StringEquals": "a", "IsNull": True, "Next": "X"}, "found 2"),
        ({"StringEquals": "a", "Next": "X"}, "must have 'Variable'"),
        ({"Variable": "v", "StringEquals": "a", "Next": "X"}, "must begin with '$'"),
        ({"Variable": "$.v", "NumericEquals": "1", "Next": "X"}, "must be a number"),
        ({"Variable": "$.v", "StringEquals": 1, "Next": "X"}, "must be a string"),
        ({"Variable": "$.v", "BooleanEquals": "true", "Next": "X"}, "must be a boolean"),
        ({"Variable": "$.v", "TimestampEquals": "2020-01-01", "Next": "X"}, "must be a timestamp"),
        ({"Variable": "$.v", "IsNull": "yes", "Next": "X"}, "must be true or false"),
        ({"Variable": "$.v", "NumericEqualsPath": "nope", "Next": "X"}, "NumericEqualsPath"),
        ({"Variable": "$.v", "StringEqual": "a", "Next": "X"}, "unknown field 'StringEqual'"),
        ({"And": [], "Next": "X"}, "non-empty array"),
        (
            {"And": [{"Variable": "$.v", "IsNull": True, "Next": "X"}], "Next": "X"},
            "must not have 'Next'",
        ),
        (
            {"Not": {"Variable": "$.v", "IsNull": True, "Next": "Y"}, "Next": "X"},
            "must not have 'Next'",
        ),
        ("rule", "must be an object"),
    ],
)
def test_rule_problems(spec: Any, fragment: str) -> None:
    """Each malformed Choice Rule is reported with the rule it breaks."""
    messages = problems_of(spec)
    assert any(fragment in m for m in messages), messages


def test_nested_problem_location_names_the_path() -> None:
    """Problems inside And/Or/Not name the nested location."""
    found: list[tuple[str, str]] = []
    compile_rule({"And": [{"Variable": "$.v"}], "Next": "X"}, "C.Choices[1]", found, True)
    assert found[0][0] == "C.Choices[1].And[0]"


def test_parse_timestamp_requires_uppercase_t_and_zone() -> None:
    """Spec "Timestamps": uppercase T, and Z or a numeric offset."""
    assert parse_timestamp("2016-03-14T01:59:00Z") is not None
    assert parse_timestamp("2016-03-14T01:59:00.123456789+02:00") is not None
    assert parse_timestamp("2016-03-14 01:59:00Z") is None
    assert parse_timestamp("2016-03-14T01:59:00") is None
    assert parse_timestamp(5) is None

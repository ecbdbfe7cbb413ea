"""Intrinsic functions: parser, static checks and every function (spec Appendix B)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from sand_workflows.errors import StatesError
from sand_workflows.intrinsics import (
    Call,
    IntrinsicSyntaxError,
    Literal,
    PathArg,
    check_intrinsic,
    evaluate,
    parse_intrinsic,
)


def run(expr: str, data: Any = None, context: Any = None) -> Any:
    return evaluate(parse_intrinsic(expr), data if data is not None else {}, context or {})


def test_parser_reads_every_argument_kind() -> None:
    """Strings, numbers, null, booleans, paths and nested calls parse to their nodes."""
    call = parse_intrinsic("States.Array('a', -1.5e2, 3, null, true, false, $.x[0], States.UUID())")
    assert isinstance(call, Call) and call.name == "States.Array"
    values = [a.value for a in call.args if isinstance(a, Literal)]
    assert values == ["a", -150.0, 3, None, True, False]
    assert isinstance(call.args[6], PathArg) and call.args[6].path.text == "$.x[0]"
    assert isinstance(call.args[7], Call) and call.args[7].name == "States.UUID"


def test_parser_keeps_commas_inside_path_brackets() -> None:
    """A path argument with a quoted bracket name containing a comma stays one argument."""
    call = parse_intrinsic("States.Array($['a,b'], 1)")
    assert len(call.args) == 2


@pytest.mark.parametrize(
    "expr",
    [
        "States.Format('a",  # unterminated string
        "States.Format('a' 'b')",  # missing comma
        "States.Format('\\x')",  # open escape
        "States.Format('{')",  # unescaped brace
        "States.Array(1) extra",
        "States.Array(",
        "(1)",
    ],
)
def test_parser_rejects_malformed_calls(expr: str) -> None:
    """Malformed calls raise IntrinsicSyntaxError with the offset."""
    with pytest.raises(IntrinsicSyntaxError):
        parse_intrinsic(expr)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("States.Nope(1)", "unknown intrinsic function 'States.Nope'"),
        ("States.UUID(1)", "takes 0 argument(s), got 1"),
        ("States.MathAdd(1)", "takes 2 argument(s), got 1"),
        ("States.MathRandom(1)", "takes 2 to 3 argument(s), got 1"),
        ("States.Format()", "takes at least 1 argument(s), got 0"),
        ("States.Format('{} {}', 1)", "2 placeholder(s) but 1 value argument(s)"),
        ("States.JsonToString('x')", "must be a Path"),
        ("States.Hash('x', 'SHA-3')", "algorithm must be one of"),
        ("States.JsonMerge($.a, $.b, true)", "must be false"),
        ("States.Array(States.Bogus())", "unknown intrinsic function 'States.Bogus'"),
    ],
)
def test_static_check_reports_problem(expr: str, fragment: str) -> None:
    """check_intrinsic names the function and the broken rule."""
    problems = check_intrinsic(expr)
    assert any(fragment in p for p in problems), problems


def test_static_check_accepts_valid_call() -> None:
    """A valid call has no problems."""
    assert check_intrinsic("States.Format('{} and {}', $.a, States.MathAdd(1, 2))") == []


@pytest.mark.parametrize(
    ("expr", "data", "expected"),
    [
        ("States.Format('x{}y{}', $.a, 2)", {"a": "A"}, "xAy2"),
        ("States.Format('\\{\\} \\' \\\\')", {}, "{} ' \\"),
        ("States.Format('{}', $.n)", {"n": None}, "null"),
        ("States.StringToJson($.s)", {"s": '{"a": [1]}'}, {"a": [1]}),
        ("States.JsonToString($.o)", {"o": {"a": [1, "x"]}}, '{"a":[1,"x"]}'),
        ("States.Array(1, $.a)", {"a": [2]}, [1, [2]]),
        ("States.ArrayPartition($.a, 2)", {"a": [1, 2, 3]}, [[1, 2], [3]]),
        ("States.ArrayContains($.a, 2)", {"a": [1, 2]}, True),
        ("States.ArrayContains($.a, true)", {"a": [1]}, False),
        ("States.ArrayRange(0, 4, 2)", {}, [0, 2, 4]),
        ("States.ArrayGetItem($.a, 1)", {"a": ["x", "y"]}, "y"),
        ("States.ArrayLength($.a)", {"a": [1, 2, 3]}, 3),
        ("States.ArrayUnique($.a)", {"a": [1, 1, True, {"k": 1}, {"k": 1}]}, [1, True, {"k": 1}]),
        ("States.Base64Encode('hé')", {}, "aMOp"),
        ("States.Base64Decode('aMOp')", {}, "hé"),
        (
            "States.JsonMerge($.a, $.b, false)",
            {"a": {"x": 1, "y": 1}, "b": {"y": 2}},
            {"x": 1, "y": 2},
        ),
        ("States.MathAdd(-3, 5)", {}, 2),
        ("States.MathAdd(2.0, 1)", {}, 3),
        ("States.StringSplit('a,b,,c', ',')", {}, ["a", "b", "c"]),
    ],
)
def test_function_result(expr: str, data: Any, expected: Any) -> None:
    """Each function returns the value Appendix B describes."""
    assert run(expr, data) == expected


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"])
def test_hash_algorithms(algorithm: str) -> None:
    """States.Hash supports the five algorithms and returns the lowercase hex digest."""
    name = algorithm.replace("-", "").lower()
    assert (
        run(f"States.Hash('input data', '{algorithm}')")
        == hashlib.new(name, b"input data").hexdigest()
    )


def test_math_random_seed_repeats_and_stays_in_bounds() -> None:
    """MathRandom with a seed is repeatable; without, it stays within [start, end]."""
    assert run("States.MathRandom(1, 1000, 42)") == run("States.MathRandom(1, 1000, 42)")
    assert all(5 <= run("States.MathRandom(5, 7)") <= 7 for _ in range(50))


def test_uuid_is_version_4() -> None:
    """States.UUID returns a random v4 UUID."""
    u = run("States.UUID()")
    assert len(u) == 36 and u[14] == "4" and run("States.UUID()") != u


def test_context_path_argument() -> None:
    """Arguments may be context-object paths."""
    assert run("States.Format('{}', $$.State.Name)", {}, {"State": {"Name": "S"}}) == "S"


@pytest.mark.parametrize(
    ("expr", "data"),
    [
        ("States.Format('{}', $.o)", {"o": [1]}),
        ("States.Format($.t)", {"t": 5}),
        ("States.StringToJson($.s)", {"s": "{"}),
        ("States.StringToJson(1)", {}),
        ("States.ArrayPartition($.a, 0)", {"a": [1]}),
        ("States.ArrayPartition('x', 1)", {}),
        ("States.ArrayRange(1, 2, 0)", {}),
        ("States.ArrayRange(1, 2000, 1)", {}),
        ("States.ArrayRange(1.5, 2, 1)", {}),
        ("States.ArrayGetItem($.a, 5)", {"a": [1]}),
        ("States.ArrayGetItem($.a, -1)", {"a": [1]}),
        ("States.ArrayLength($.a)", {"a": "x"}),
        ("States.ArrayUnique(1)", {}),
        ("States.Base64Encode(1)", {}),
        ("States.Base64Decode('%%%')", {}),
        ("States.Base64Decode('/w==')", {}),
        ("States.Hash(1, 'MD5')", {}),
        ("States.Hash('x', $.alg)", {"alg": "SHA-3"}),
        ("States.JsonMerge($.a, 1, false)", {"a": {}}),
        ("States.JsonMerge($.a, $.a, $.deep)", {"a": {}, "deep": True}),
        ("States.MathRandom(5, 1)", {}),
        ("States.MathAdd('1', 2)", {}),
        ("States.MathAdd(true, 2)", {}),
        ("States.StringSplit('a', '')", {}),
        ("States.StringSplit(1, ',')", {}),
        ("States.ArrayLength($.missing)", {}),
    ],
)
def test_bad_arguments_raise_intrinsic_failure(expr: str, data: Any) -> None:
    """Any run-time failure is States.IntrinsicFailure with an explanation."""
    with pytest.raises(StatesError) as info:
        run(expr, data)
    assert info.value.error == "States.IntrinsicFailure"
    assert info.value.cause

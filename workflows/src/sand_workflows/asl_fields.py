"""Field values of ASL states: Paths, Payload Templates, Retry and Catch.

Each method validates one field (reporting every problem at the field's location) and
returns its compiled form; the state-level structure is in ``asl_loader``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from . import errors, variables
from .intrinsics import check_intrinsic
from .jsonata_lang import Template, check_template
from .model import ROOT, Catcher, Retrier
from .paths import Path, check_path, check_reference_path, compile_path, compile_reference_path
from .suggest import did_you_mean
from .validation import Compiler, is_int, is_number

JITTER_STRATEGIES = ("FULL", "NONE")
RETRIER_FIELDS = frozenset(
    {
        "ErrorEquals",
        "IntervalSeconds",
        "MaxAttempts",
        "BackoffRate",
        "MaxDelaySeconds",
        "JitterStrategy",
        "Comment",
    }
)
CATCHER_FIELDS = frozenset({"ErrorEquals", "Next", "ResultPath", "Assign", "Comment"})
JSONATA_CATCHER_FIELDS = frozenset({"ErrorEquals", "Next", "Output", "Assign", "Comment"})


class AslFieldCompiler(Compiler):
    """Validates and compiles the field values shared by several ASL state types."""

    # Whether a transition of the scope being compiled names no state: its graph is then
    # not checked (every "unreachable" would follow from the typo, not from the design).
    dangling = False

    def no_state(self, where: str, field: str, target: Any, names: Collection[str]) -> None:
        """Report that ``field`` (Next, Default) names ``target``, which is no state of the
        scope's ``names``, with the closest name when one is close."""
        hint = did_you_mean(target, names) if isinstance(target, str) else ""
        self.problem(where, f"{field} {target!r} names no state in this scope{hint}")
        self.dangling = True

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

    def assign(self, value: Any, where: str, jsonata: bool) -> Any:
        """An Assign field: an object naming variables. JSONPath values are Payload
        Template values (``name.$`` takes a path or an intrinsic); JSONata values may hold
        ``{% %}`` expressions. The compiled form, or None when it is invalid."""
        if not isinstance(value, dict):
            self.problem(where, "Assign must be an object whose fields name variables")
            return None
        ok = True
        for key in value:
            problem = variables.name_problem(key)
            if problem is not None:
                self.problem(f"{where}.{key}", problem)
                ok = False
            elif jsonata and key.endswith(".$"):
                self.problem(
                    f"{where}.{key}", "a JSONata Assign takes {% %} expressions, not '.$' fields"
                )
                ok = False
        literal = {k: v for k, v in value.items() if not str(k).endswith(".$")}
        too_big = variables.literal_size_problem(literal)
        if too_big is not None:
            self.problem(where, too_big)
            ok = False
        if jsonata:
            before = len(self.problems)
            check_template(value, where, self.problem)
            return Template.of(value) if ok and len(self.problems) == before else None
        stripped: set[str] = set()
        for key in value:
            plain = key[:-2] if key.endswith(".$") else key
            if plain in stripped:
                self.problem(f"{where}.{key}", f"variable '{plain}' is assigned twice")
                ok = False
            stripped.add(plain)
        self.check_template(value, where)
        return value if ok else None

    def jsonata_value(self, value: Any, where: str) -> Template | None:
        """A field of a JSONata state (any JSON value; ``{% %}`` strings are expressions)."""
        before = len(self.problems)
        check_template(value, where, self.problem)
        return Template.of(value) if len(self.problems) == before else None

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
                if key not in RETRIER_FIELDS:
                    self.problem(loc, f"unknown field '{key}' in a Retrier")
            names = self.error_names(spec.get("ErrorEquals"), f"{loc}.ErrorEquals")
            if errors.ALL in names and i != len(value) - 1:
                self.problem(loc, "a Retrier with States.ALL must be the last Retrier")
            interval = spec.get("IntervalSeconds", 1)
            if not is_int(interval) or interval <= 0:
                self.problem(
                    f"{loc}.IntervalSeconds", f"must be a positive integer, got {interval!r}"
                )
                interval = 1
            attempts = spec.get("MaxAttempts", 3)
            if not is_int(attempts) or attempts < 0:
                self.problem(
                    f"{loc}.MaxAttempts", f"must be a non-negative integer, got {attempts!r}"
                )
                attempts = 0
            rate = spec.get("BackoffRate", 2.0)
            if not is_number(rate) or rate < 1.0:
                self.problem(f"{loc}.BackoffRate", f"must be a number >= 1.0, got {rate!r}")
                rate = 1.0
            max_delay = spec.get("MaxDelaySeconds")
            if max_delay is not None and (not is_int(max_delay) or max_delay <= 0):
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

    def catchers(
        self, value: Any, where: str, names: set[str], jsonata: bool = False
    ) -> tuple[Catcher, ...]:
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
            allowed = JSONATA_CATCHER_FIELDS if jsonata else CATCHER_FIELDS
            for key in spec:
                if key not in allowed:
                    other = "JSONPath" if jsonata else "JSONata"
                    known = key in (CATCHER_FIELDS if jsonata else JSONATA_CATCHER_FIELDS)
                    self.problem(
                        f"{loc}.{key}",
                        f"'{key}' is a {other} field of a Catcher"
                        if known
                        else f"unknown field '{key}' in a Catcher",
                    )
            error_names = self.error_names(spec.get("ErrorEquals"), f"{loc}.ErrorEquals")
            if errors.ALL in error_names and i != len(value) - 1:
                self.problem(loc, "a Catcher with States.ALL must be the last Catcher")
            target = spec.get("Next")
            if not isinstance(target, str):
                self.problem(loc, "a Catcher must have 'Next' naming a state")
                continue
            if target not in names:
                self.no_state(f"{loc}.Next", "Next", target, names)
                continue
            rp = (
                self.result_path(spec["ResultPath"], f"{loc}.ResultPath")
                if "ResultPath" in spec and not jsonata
                else ROOT
            )
            assign = (
                self.assign(spec["Assign"], f"{loc}.Assign", jsonata) if "Assign" in spec else None
            )
            output = (
                self.jsonata_value(spec["Output"], f"{loc}.Output")
                if jsonata and "Output" in spec
                else None
            )
            out.append(Catcher(error_names, target, rp, assign, output))
        return tuple(out)

    def positive_or_path(
        self, spec: dict[str, Any], key: str, loc: str, fields: dict[str, Any], attr: str
    ) -> None:
        if key in spec and key + "Path" in spec:
            self.problem(loc, f"a state must not have both '{key}' and '{key}Path'")
        if key in spec:
            v = spec[key]
            if not is_int(v) or v <= 0:
                self.problem(f"{loc}.{key}", f"must be a positive integer, got {v!r}")
            else:
                fields[attr] = float(v)
        if key + "Path" in spec:
            fields[attr + "_path"] = self.reference(
                spec[key + "Path"], f"{loc}.{key}Path", key + "Path"
            )

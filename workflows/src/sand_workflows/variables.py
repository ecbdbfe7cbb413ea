"""Workflow variables (``Assign``, ``$name``; decision 0020).

A thread of an execution carries the variables visible to it on its ``Lineage``. A
Parallel branch or Map iteration starts with a copy of the variables of the state that
opened it: it reads the outer values, and what it assigns stays inside it. All the
assignments of one state are computed from the values at state entry and take effect
together when the state hands over, so a state never sees its own assignments.

This module holds the rules both query languages share: the naming rule, the size limits
(Step Functions': 256 KiB per variable and per Assign, 10 MiB for all of an execution's
variables) and the one function that applies an assignment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from . import errors
from .errors import StatesError

MAX_NAME_LENGTH = 80
RESERVED_NAMES = frozenset({"states"})
MAX_VARIABLE_BYTES = 256 * 1024
MAX_ASSIGN_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 10 * 1024 * 1024

Variables = Mapping[str, Any]
NO_VARIABLES: Variables = {}


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a variable, or None when it can.

    A name is a Unicode identifier (a letter or ``_``, then letters, digits, ``_``; what
    JSONata and JavaScript accept after ``$``) of at most 80 characters, and not ``states``.
    """
    if not isinstance(name, str) or not name:
        return "a variable name must be a non-empty string"
    if name.endswith(".$"):
        name = name[:-2]
    if not name.isidentifier():
        return (
            f"'{name}' is not a valid variable name: it must start with a letter or '_' and"
            " contain only letters, digits and '_'"
        )
    if len(name) > MAX_NAME_LENGTH:
        return f"variable name '{name[:20]}...' is longer than {MAX_NAME_LENGTH} characters"
    if name in RESERVED_NAMES:
        return f"'${name}' is reserved by the States Language"
    return None


def size_of(value: Any) -> int:
    """The size a value counts for in the limits: its compact JSON in UTF-8."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def literal_size_problem(assign: Mapping[str, Any]) -> str | None:
    """Why the literal values of an Assign break a size limit (checked at validation)."""
    total = 0
    for name, value in assign.items():
        size = size_of(value)
        total += size
        if size > MAX_VARIABLE_BYTES:
            return f"the value of '{name}' is {size} bytes, more than {MAX_VARIABLE_BYTES}"
    if total > MAX_ASSIGN_BYTES:
        return f"the values assigned are {total} bytes, more than {MAX_ASSIGN_BYTES}"
    return None


def assign(state: str, current: Variables, new: Mapping[str, Any]) -> Variables:
    """``current`` with ``new`` assigned; StatesError(States.Runtime) when a limit breaks."""
    if not new:
        return current
    total = 0
    for name, value in new.items():
        size = size_of(value)
        total += size
        if size > MAX_VARIABLE_BYTES:
            raise StatesError(
                errors.RUNTIME,
                f"state '{state}' Assign: the value of '{name}' is {size} bytes, more than"
                f" the {MAX_VARIABLE_BYTES} a variable may hold",
            )
    if total > MAX_ASSIGN_BYTES:
        raise StatesError(
            errors.RUNTIME,
            f"state '{state}' Assign: the values assigned are {total} bytes, more than the"
            f" {MAX_ASSIGN_BYTES} one Assign may set",
        )
    merged = {**current, **new}
    # Each value is at most 256 KiB, so only 41 variables or more can exceed 10 MiB.
    if len(merged) * MAX_VARIABLE_BYTES > MAX_TOTAL_BYTES:
        whole = size_of(merged)
        if whole > MAX_TOTAL_BYTES:
            raise StatesError(
                errors.RUNTIME,
                f"state '{state}' Assign: the execution's variables would hold {whole} bytes,"
                f" more than {MAX_TOTAL_BYTES}",
            )
    return merged

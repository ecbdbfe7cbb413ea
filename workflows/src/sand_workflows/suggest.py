""" "Did you mean ...?" for a mistyped name: one helper for the loaders and the CLI."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# difflib's ratio: 0.6 takes 'helo' for 'hello' and 'mian' for 'main', not 'x' for 'main'.
_CUTOFF = 0.6


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like ``name`` (difflib), or None when none is close."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=_CUTOFF)
    return matches[0] if matches else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'hello'?"`` for the closest candidate, or ``""``."""
    match = closest(name, candidates)
    return f"; did you mean '{match}'?" if match is not None and match != name else ""

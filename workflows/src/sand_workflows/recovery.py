"""What a state does with an error: Retry, then Catch, then propagate.

Spec "Errors", "Retrying after error" and "Fallback states". ``recover`` only decides;
the engine turns the decision into a TimerCall, a transition or a failure.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import errors
from .model import Catcher, RecoverableState, Retrier, State
from .paths import PathWriteError, set_at


@dataclass(frozen=True, slots=True)
class RetryLater:
    """Re-enter the state with its raw input after ``delay_s``; ``retry_counts`` include
    this attempt."""

    delay_s: float
    retry_counts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Caught:
    """Continue at ``next`` with ``output`` (the raw input with the error output placed);
    ``catcher`` caught ``error_output`` and may still assign variables (or, in a JSONata
    state, replace the output)."""

    next: str
    output: Any
    catcher: Catcher
    error_output: Any


@dataclass(frozen=True, slots=True)
class Unhandled:
    """The error leaves the state (maybe replaced: a Catcher's ResultPath failed)."""

    error: str
    cause: str


Recovery = RetryLater | Caught | Unhandled


def matches(names: Sequence[str], error: str) -> bool:
    # Spec Appendix A: States.ALL "matches any Error Name"; every other name matches itself.
    return errors.ALL in names or error in names


def recover(
    st: State,
    raw: Any,
    retry_counts: tuple[int, ...],
    error: str,
    cause: str,
    rng: random.Random,
) -> Recovery:
    """What ``st`` does with ``error``; a state without Retry/Catch lets it through.

    ``retry_counts`` are the attempts made so far per Retrier (empty: none).
    """
    if not isinstance(st, RecoverableState):
        return Unhandled(error, cause)
    counts = list(retry_counts or [0] * len(st.retry))
    counts += [0] * (len(st.retry) - len(counts))
    for i, retrier in enumerate(st.retry):
        if not matches(retrier.error_equals, error):
            continue
        if counts[i] < retrier.max_attempts:
            delay = retry_delay(retrier, counts[i], rng)
            counts[i] += 1
            return RetryLater(delay, tuple(counts))
        break  # the first matching Retrier is exhausted: fall through to Catch
    for catcher in st.catch:
        if matches(catcher.error_equals, error):
            error_output = {"Error": error, "Cause": cause}
            if catcher.result_path is None:
                return Caught(catcher.next, raw, catcher, error_output)
            if catcher.result_path.steps == ():
                return Caught(catcher.next, error_output, catcher, error_output)
            try:
                placed = set_at(raw, catcher.result_path, error_output)
                return Caught(catcher.next, placed, catcher, error_output)
            except PathWriteError as exc:
                return Unhandled(
                    errors.RESULT_PATH_MATCH_FAILURE, f"state '{st.name}' Catch: {exc}"
                )
    return Unhandled(error, cause)


def retry_delay(retrier: Retrier, done: int, rng: random.Random) -> float:
    """Delay before retry ``done`` (0-based): interval × rate^done, capped, maybe jittered."""
    delay = retrier.interval_s * retrier.backoff_rate**done
    if retrier.max_delay_s is not None:
        delay = min(delay, float(retrier.max_delay_s))
    if retrier.jitter == "FULL":
        delay = rng.uniform(0.0, delay)
    return delay

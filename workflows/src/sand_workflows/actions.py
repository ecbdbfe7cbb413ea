"""What the engine asks its driver to do. Immutable records (decision 0002)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TaskCall:
    """Run grain ``grain`` on ``input``; report with ``task_succeeded``/``task_failed(token)``.

    ``timeout_s`` is the deadline the runner enforces (reporting ``States.Timeout``), or
    None for the runner's default. ``context`` is the context object (``$$``).
    """

    grain: str
    input: Any
    token: str
    timeout_s: float | None
    context: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TimerCall:
    """Call ``timer_fired(token)`` after ``delay_s`` seconds (a Wait state or a Retry)."""

    delay_s: float
    token: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The execution succeeded with ``output``."""

    output: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The execution failed."""

    error: str
    cause: str


Action = TaskCall | TimerCall | Finished | Failed

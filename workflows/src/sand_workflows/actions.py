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
class AwaitCallback:
    """The grain of a callback task (``.waitForTaskToken``) ran: wait, holding no process,
    until its outcome is sent with ``task_token`` (then call ``callback_ended(token, ...)``)
    or the wait ends at ``timeout_at_ms`` (epoch ms; States.Timeout) or ``heartbeat_ms``
    after the last heartbeat (0: no heartbeat needed; States.HeartbeatTimeout)."""

    token: str
    task_token: str
    timeout_at_ms: int
    heartbeat_ms: int


@dataclass(frozen=True, slots=True)
class Finished:
    """The execution succeeded with ``output``."""

    output: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The execution failed."""

    error: str
    cause: str


Action = TaskCall | TimerCall | AwaitCallback | Finished | Failed

"""One readable line per history event (decision 0018), for ``sand emulate --trace`` and
``sand execution show``: the same events in the emulator and on the cluster, so one
renderer. Lines are Rich markup with every user-provided text escaped."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from rich.markup import escape

VALUE_CHARS: Final = 120
# What each event type shows after its name: (key, label) pairs, in order.
_DETAILS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "ExecutionStarted": (("input", "in"),),
    "ExecutionRedriven": (("from_state", "from"), ("input", "in"), ("redrive_count", "redrive")),
    "StateEntered": (("input", "in"),),
    "StateExited": (("output", "out"), ("next", "next")),
    "TaskScheduled": (("grain", "grain"), ("input", "in")),
    # A call the emulator answered from a mock file: the response it took (``sand.mocks``).
    "TaskStarted": (("grain", "grain"), ("host", "host"), ("pid", "pid"), ("response", "mocked")),
    "TaskSucceeded": (("output", "out"), ("duration_ms", "ms")),
    # A callback task's grain returned: the wait's token in full, for `sand task success`.
    "TaskSubmitted": (
        ("output", "out"),
        ("task_token", "token"),
        ("timeout_at", "times out at"),
        ("heartbeat_s", "heartbeat s"),
    ),
    "RetryScheduled": (("error", "error"), ("delay_s", "in s"), ("retry", "retry")),
    "Caught": (("error", "error"), ("next", "next")),
    "WaitStarted": (("seconds", "s"),),
    # A redrive's: the slots whose outputs it kept (they do not run again).
    "ParallelStarted": (("branches", "branches"), ("kept", "kept")),
    "MapStarted": (("items", "items"), ("kept", "kept")),
    "BranchSucceeded": (("output", "out"),),
    "ExecutionSucceeded": (("output", "out"),),
}
_FAILURES: Final = frozenset(
    {
        "TaskFailed",
        "TaskTimedOut",
        "StateFailed",
        "BranchFailed",
        "ExecutionFailed",
        "ExecutionAborted",
    }
)


def short(value: Any, limit: int = VALUE_CHARS) -> str:
    """``value`` as compact JSON, cut at ``limit`` characters (escaped for Rich)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return escape(text)


def where(event: dict[str, Any]) -> str:
    """``path/state`` of the event ("" path: the state alone; no state: the path)."""
    path = str(event.get("path") or "")
    state = event.get("state")
    if state is None:
        return path or "execution"
    return f"{path}/{state}" if path else str(state)


def line(event: dict[str, Any], t0_ms: int) -> str:
    """The event as one line: offset from ``t0_ms``, where, type, details."""
    offset = (int(event.get("at_ms") or t0_ms) - t0_ms) / 1000
    kind = str(event.get("type") or "?")
    head = f"[dim]{offset:+9.3f} s[/dim]  {escape(where(event)):<24} "
    if kind in _FAILURES:
        error = escape(str(event.get("error") or ""))
        cause = escape(str(event.get("cause") or ""))
        ran = _details(event, _RAN)  # where a failed task ran, and how long
        return f"{head}[bold red]{kind}[/bold red] [red]{error}[/red]: {cause}" + (
            f"  {ran}" if ran else ""
        )
    style = "green" if kind.endswith("Succeeded") else "bold" if kind == "StateEntered" else ""
    name = f"[{style}]{kind}[/{style}]" if style else kind
    text = f"{head}{name}  " + _details(event, _DETAILS.get(kind, ()))
    steps = event.get("steps")
    if isinstance(steps, dict) and "variables" in steps:
        # The variables once the state's Assign took effect (decision 0020).
        text += f"  [dim]vars[/dim] {short(steps['variables'])}"
    return text


_RAN: Final = (("grain", "grain"), ("host", "host"), ("pid", "pid"), ("duration_ms", "ms"))


def _details(event: dict[str, Any], keys: tuple[tuple[str, str], ...]) -> str:
    parts = []
    for key, label in keys:
        if event.get(key) is not None:
            value = event[key]
            if key in ("input", "output"):
                shown = short(value)
            elif key == "timeout_at" and isinstance(value, int):  # epoch ms
                shown = datetime.fromtimestamp(value / 1000, UTC).isoformat(timespec="seconds")
            else:
                shown = escape(str(value))
            parts.append(f"[dim]{label}[/dim] {shown}")
    return "  ".join(parts)

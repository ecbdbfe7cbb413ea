"""Executions on the cluster: list them, show one with its per-state timeline, stop one,
redrive one (issue 13).

Exit status as every command's (``sand.cli.output``): 0 done; 2 the API refused (its message
on stderr, JSON under ``--json``: an unknown id, a finished execution stopped, a succeeded one
redriven) or a usage error. Every string the server sent is escaped before it reaches rich, so
``[a-z]+`` in an error prints as is.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from itertools import islice
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sand import timeline
from sand.cli.api import client, stderr, url_option
from sand.cli.output import emit_json, error_exit, json_option
from sand.client import Execution, ExecutionSummary, HistoryEvent, SandApiError, SandClient
from sand.contracts import ExecutionStatus

T = TypeVar("T")

STATUS_STYLE: dict[str, str] = {
    ExecutionStatus.RUNNING.value: "cyan",
    ExecutionStatus.SUCCEEDED.value: "green",
    ExecutionStatus.FAILED.value: "bold red",
    ExecutionStatus.ABORTED.value: "magenta",
}
_RELATIVE = re.compile(r"(\d+)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _out() -> Console:
    # piped output is not cut to 80 columns; a terminal gets its own width
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _call(call: Callable[[], T]) -> T:
    """``call()``, or exit 2 with the server's refusal on stderr."""
    try:
        return call()
    except SandApiError as exc:
        _refused(exc)


def _refused(exc: SandApiError) -> NoReturn:
    error_exit(str(exc), 2, status=exc.status)


def _print_json(doc: Any) -> None:
    emit_json(doc)


# -- formatting ------------------------------------------------------------------------------


def _status(status: str) -> str:
    style = STATUS_STYLE.get(status, "yellow")
    return f"[{style}]{escape(status)}[/{style}]"


def _time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _duration(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m{seconds:02d}s"


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def parse_since(text: str, now_s: float | None = None) -> int | str:
    """``--since``: epoch ms, RFC 3339, or an age (``90s``, ``15m``, ``2h``, ``7d``) as ms."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    relative = _RELATIVE.fullmatch(text)
    if relative:
        seconds = int(relative.group(1)) * _UNIT_S[relative.group(2)]
        return int(((time.time() if now_s is None else now_s) - seconds) * 1000)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise click.BadParameter(
            f"expected epoch milliseconds, an RFC 3339 time with a zone "
            f"(2026-01-01T00:00:00Z) or an age such as 15m, 2h, 7d; got {text!r}",
            param_hint="--since",
        )
    return text


# -- sand executions ------------------------------------------------------------------------


@click.command()
@click.option("--app", default=None, help="Only this application's executions.")
@click.option(
    "--status",
    type=click.Choice([s.value for s in ExecutionStatus], case_sensitive=False),
    default=None,
    help="Only executions in this status.",
)
@click.option(
    "--since",
    default=None,
    metavar="WHEN",
    help="Started at or after WHEN: epoch ms, RFC 3339, or an age (15m, 2h, 7d).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=50,
    show_default=True,
    help="Show at most this many (newest first).",
)
@json_option
@url_option
def executions(
    app: str | None,
    status: str | None,
    since: str | None,
    limit: int,
    as_json: bool,
    url: str | None,
) -> None:
    """List executions, newest first: yours, or every one for an admin."""
    when = parse_since(since) if since is not None else None
    gateway = client(url)
    rows: list[ExecutionSummary] = _call(
        lambda: list(
            islice(
                gateway.all_executions(
                    app=app,
                    status=status.upper() if status else None,
                    since=when,
                    limit=min(limit, 1000),
                ),
                limit,
            )
        )
    )
    if as_json:
        _print_json({"executions": [asdict(r) for r in rows]})
        return
    if not rows:
        stderr().print("no executions match")
        return
    table = Table(title="executions", title_justify="left")
    for column in ("id", "app", "workflow", "status", "started", "duration", "error"):
        table.add_column(column, no_wrap=column in ("id", "status", "started"))
    for row in rows:
        table.add_row(
            escape(row.execution_id),
            escape(row.app),
            escape(row.workflow),
            _status(row.status),
            _time(row.started_ms),
            _duration(row.duration_ms),
            escape(": ".join(x for x in (row.error, row.cause) if x)),
        )
    _out().print(table)


# -- sand execution show ----------------------------------------------------------------------


@click.group()
def execution() -> None:
    """One execution: `sand execution show ID`."""


@execution.command("show")
@click.argument("execution_id")
@json_option
@url_option
def show(execution_id: str, as_json: bool, url: str | None) -> None:
    """Show EXECUTION_ID: status, input, output or error, and its per-state timeline."""
    gateway = client(url)
    doc = _call(lambda: gateway.execution(execution_id))
    events, truncated = _call(lambda: _history(gateway, execution_id))
    if as_json:
        document = {k: v for k, v in asdict(doc).items() if k != "existing"}
        shown = {"execution": document, "events": [e.to_json() for e in events]}
        _print_json({**shown, "truncated": truncated})
        return
    out = _out()
    _header(out, doc, events)
    if not events:
        out.print("[dim]no history was recorded for this execution[/dim]")
        return
    _timeline(out, events)
    if truncated:
        out.print("[yellow]the history was cut at its cap: later events were not recorded[/yellow]")


def _history(gateway: SandClient, execution_id: str) -> tuple[list[HistoryEvent], bool]:
    """Every page of the history, and whether the server cut it at its cap."""
    events: list[HistoryEvent] = []
    page: str | None = None
    while True:
        listed = gateway.history(execution_id, limit=1000, page=page)
        events.extend(listed.events)
        if not listed.next_page:
            return events, listed.truncated
        page = listed.next_page


def _header(out: Console, doc: Execution, events: list[HistoryEvent]) -> None:
    out.print(f"[bold]execution[/bold] {escape(doc.execution_id)}  {_status(doc.status)}")
    if doc.trigger is not None:
        out.print(f"  started by {escape(started_by(doc.trigger))}")
    lines = [
        ("app", f"{doc.app or ''} / {doc.workflow or ''}"),
        ("name", doc.name),
        ("started", _time(doc.started_ms)),
        ("finished", _time(doc.finished_ms)),
        (
            "duration",
            _duration(doc.finished_ms - doc.started_ms)
            if doc.finished_ms is not None and doc.started_ms is not None
            else None,
        ),
        ("redriven", f"{doc.redrive_count} time(s)" if doc.redrive_count else None),
    ]
    for label, value in lines:
        if value:
            out.print(f"  {label:<10}{escape(value)}")
    if doc.input is not None:
        out.print(f"  {'input':<10}{escape(_value(doc.input))}")
    if doc.status == ExecutionStatus.SUCCEEDED:
        out.print(f"  {'output':<10}{escape(_value(doc.output))}")
    if doc.error or doc.cause:
        out.print(f"  [red]{'error':<10}{escape(doc.error or '')}[/red]")
        out.print(f"  [red]{'cause':<10}{escape(doc.cause or '')}[/red]")
    failed = (
        failed_state(events, doc.error, doc.cause) if doc.status == ExecutionStatus.FAILED else None
    )
    if failed is not None:
        out.print(f"  [bold red]{'failed in':<10}{escape(failed)}[/bold red]")
    out.print()


def started_by(trigger: dict[str, Any]) -> str:
    """``trigger nightly (schedule, 2026-11-27T02:00:00Z)`` or ``trigger orders (topic orders,
    partition 0, offset 17)``: what the execution document says started it (decision 0034)."""
    kind = trigger.get("kind")
    if kind == "schedule":
        details = f"schedule, {trigger.get('time')}"
    elif kind == "topic":
        details = (
            f"topic {trigger.get('topic')}, partition {trigger.get('partition')}, "
            f"offset {trigger.get('offset')}"
        )
    else:
        details = str(kind)
    return f"trigger {trigger.get('name')} ({details})"


def failed_state(
    events: Iterable[HistoryEvent], error: str | None = None, cause: str | None = None
) -> str | None:
    """Where the latest run (after its last redrive) failed: the path/state of the first
    failed task whose error and cause are the execution's, else of the first failed task
    (a Map's items that fail after the one that failed it come later), else of the last
    failed branch (a task's failure travels up through its branches, which fail after it)."""
    run = list(events)
    redrives = [i for i, event in enumerate(run) if event.type == "ExecutionRedriven"]
    if redrives:
        run = run[redrives[-1] + 1 :]
    matching = first = branch = None
    for event in run:
        if event.type == "TaskFailed":
            where = timeline.where(event.to_json())
            first = first or where
            if matching is None and (event.error, event.cause) == (error, cause):
                matching = where
        elif event.failed and event.type not in ("ExecutionFailed", "ExecutionAborted"):
            branch = timeline.where(event.to_json())
    return matching or first or branch


def _timeline(out: Console, events: list[HistoryEvent]) -> None:
    """One line per event (the renderer ``sand emulate --trace`` uses too): offset, where,
    type and its details; failures in red with where the task ran and how long it took."""
    start = events[0].at_ms
    for event in events:
        out.print(timeline.line(event.to_json(), start), soft_wrap=True)


# -- sand stop, sand redrive ----------------------------------------------------------------


@click.command()
@click.argument("execution_id")
@click.option("--error", default=None, help="The error to record (default States.Aborted).")
@click.option("--cause", default=None, help='Why (default "stopped by <you>").')
@url_option
def stop(execution_id: str, error: str | None, cause: str | None, url: str | None) -> None:
    """Stop a running execution: its grains are killed and it ends ABORTED."""
    doc = _call(lambda: client(url).stop(execution_id, error=error, cause=cause))
    stderr().print(
        f"stopped {escape(doc.execution_id)}: {_status(doc.status)} "
        f"({escape(doc.error or '')}: {escape(doc.cause or '')})"
    )


@click.command()
@click.argument("execution_id")
@url_option
def redrive(execution_id: str, url: str | None) -> None:
    """Run a FAILED or ABORTED execution again from the state that failed."""
    doc = _call(lambda: client(url).redrive(execution_id))
    count = f", redrive {doc.redrive_count}" if doc.redrive_count else ""
    stderr().print(
        f"redriven {escape(doc.execution_id)}: {_status(doc.status)}{count}; "
        f"follow it with `sand execution show {escape(doc.execution_id)}`"
    )


COMMANDS: list[click.Command] = [executions, execution, stop, redrive]

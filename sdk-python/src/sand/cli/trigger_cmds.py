"""``sand triggers``: an application's triggers (decision 0034), the schedules and Kafka
topics that start its executions without a client.

    sand triggers list APP [--json]     # each trigger, its state, next firing or lag, last
    sand triggers pause APP NAME        # it starts nothing until resumed
    sand triggers resume APP NAME

A subcommand per action, as ``sand task`` and ``sand execution show`` are: ``sand triggers
APP`` could not tell an app called ``pause`` from the subcommand. Exit status as every
command's (``sand.cli.output``): 0 done; 2 refused (an app that is not deployed, with the
closest name deployed; a trigger the app does not have, with the ones it has), or a usage
error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sand.cli.api import app_call, client, complete_app_name, url_option
from sand.cli.output import emit_json, json_option, say
from sand.client import SandClient, TriggerInfo


@click.group()
def triggers() -> None:
    """An application's triggers: schedules (rate or cron) and Kafka topics that start its
    executions. `list` shows them, `pause` and `resume` stop and restart one."""


@triggers.command("list")
@click.argument("app", shell_complete=complete_app_name)
@json_option
@url_option
def list_triggers(app: str, as_json: bool, url: str | None) -> None:
    """List APP's triggers and their state.

    Each trigger: what fires it, its workflow, whether it is paused, when a schedule fires
    next (and last did, with the execution it started), how many of a topic's records have
    not started an execution yet."""
    api = client(url)
    listed = app_call(api, app, lambda: api.triggers(app))
    if as_json:
        emit_json({"triggers": [asdict(t) for t in listed]})
        return
    if not listed:
        say(f"application '{app}' has no triggers")
        return
    table = Table(title=f"triggers of {app}", title_justify="left")
    for column in ("name", "kind", "spec", "workflow", "state", "next/lag", "last"):
        table.add_column(column, no_wrap=column != "spec")
    for trigger in listed:
        table.add_row(
            Text(trigger.name),
            Text(trigger.kind),
            Text(spec(trigger)),
            Text(trigger.workflow),
            Text("paused", style="yellow") if trigger.paused else Text("active", style="green"),
            Text(next_or_lag(trigger)),
            Text(last(trigger)),
        )
    _console().print(table)


@triggers.command("pause")
@click.argument("app", shell_complete=complete_app_name)
@click.argument("name")
@json_option
@url_option
def pause(app: str, name: str, as_json: bool, url: str | None) -> None:
    """Pause APP's trigger NAME.

    It starts no execution until resumed, and a schedule's firings meanwhile are never run.
    Pausing a paused trigger is no error."""
    _act(url, app, lambda api: api.pause_trigger(app, name), as_json)


@triggers.command("resume")
@click.argument("app", shell_complete=complete_app_name)
@click.argument("name")
@json_option
@url_option
def resume(app: str, name: str, as_json: bool, url: str | None) -> None:
    """Resume APP's paused trigger NAME.

    It starts executions again, a schedule from its next firing."""
    _act(url, app, lambda api: api.resume_trigger(app, name), as_json)


def _act(
    url: str | None, app: str, call: Callable[[SandClient], TriggerInfo], as_json: bool
) -> None:
    """``call`` on the gateway's client, and the trigger's new state: its document under
    --json, else one line on stderr."""
    api = client(url)
    trigger = app_call(api, app, lambda: call(api))
    if as_json:
        emit_json(asdict(trigger))
        return
    say(f"trigger {trigger.name} of {app}: {state(trigger)}")


# -- formatting --------------------------------------------------------------------------------


def spec(trigger: TriggerInfo) -> str:
    """What fires it: the schedule and its time zone, or the topic."""
    if trigger.kind == "topic":
        return f"topic {trigger.topic or '?'}"
    return " ".join(part for part in (trigger.schedule, trigger.timezone) if part)


def next_or_lag(trigger: TriggerInfo) -> str:
    """A schedule's next firing (none while paused), or how many of a topic's records have
    not started an execution yet."""
    if trigger.kind == "topic":
        return "lag unknown" if trigger.lag is None else f"lag {trigger.lag}"
    return trigger.next_firing or "-"


def last(trigger: TriggerInfo) -> str:
    """A schedule's latest firing and the execution it started."""
    parts = [p for p in (trigger.last_firing_time, trigger.last_execution_id) if p]
    return " ".join(parts) or "-"


def state(trigger: TriggerInfo) -> str:
    """``paused since T`` or ``active``, with what comes next."""
    if trigger.paused:
        return f"paused since {trigger.paused_at}" if trigger.paused_at else "paused"
    if trigger.kind == "topic":
        return f"active, {next_or_lag(trigger)}"
    return f"active, next firing {trigger.next_firing}" if trigger.next_firing else "active"


def _console() -> Console:
    # a pipe gets rows of 200 columns, not 80: ids and times are never cut or wrapped
    return Console(file=sys.stdout, highlight=False, width=None if sys.stdout.isatty() else 200)


COMMANDS: list[click.Command] = [triggers]

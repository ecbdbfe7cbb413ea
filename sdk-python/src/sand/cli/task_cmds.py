"""``sand task``: answer a Task that waits for a callback (issue 23, decision 0033).

A Task whose Resource ends in ``.waitForTaskToken`` runs its grain with a task token in its
context object (``$$.Task.Token``; in a grain, ``context.task_token``) and then
waits, without a grain running, until someone reports the outcome of the work the token was
handed to: `sand task success`, `sand task failure`, or `sand task heartbeat` to say the
work goes on. Each calls ``POST /v1/tasks/{token}/success|failure|heartbeat``.

Exit status as every command's (``sand.cli.output``): 0 done; 2 refused (a task that no
longer waits: 409 with its status; a malformed token: 400; another user's app: 403; busy:
429), or a usage error such as --output that is not JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from sand.cli.api import api_call, client, url_option
from sand.cli.inputs import read_json_option
from sand.cli.output import emit_json, json_option, say
from sand.client import SandClient

F = TypeVar("F", bound=Callable[..., Any])

_TOKEN_HELP = (
    "TOKEN is the task token the waiting Task handed to its grain: `$$.Task.Token` of a Task "
    "whose Resource ends in `.waitForTaskToken` (in the grain: context.task_token)."
)


def _token_argument(command: F) -> F:
    """The TOKEN argument, and what a token is at the end of the command's help (so that
    each subcommand's --help says it, written once)."""
    command.__doc__ = f"{command.__doc__}\n\n    {_TOKEN_HELP}"
    return click.argument("token", callback=_non_empty)(command)


def _non_empty(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # an empty token would make another path (/v1/tasks//success); say so before sending
    if not value.strip():
        raise click.BadParameter("is empty", param_hint="TOKEN")
    return value


def _report(action: str, status: str, as_json: bool) -> None:
    """What the server answered: ``{"status"}`` under --json, else one line on stderr."""
    if as_json:
        emit_json({"status": status})
        return
    say(f"{action} sent: the task is {status}")


@click.group()
def task() -> None:
    """Answer a Task waiting for a callback (Resource `<grain>.waitForTaskToken`): its
    result, its failure, or a heartbeat. Each takes the task token the Task handed to its
    grain (`$$.Task.Token`), which names the wait."""


@task.command("success")
@_token_argument
@click.option(
    "--output",
    "output_text",
    default=None,
    metavar="JSON",
    help="The task's result, as JSON ('-' reads stdin). Without --output or --output-file: {}.",
)
@click.option(
    "--output-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Read the result JSON from this file ('-' reads stdin).",
)
@url_option
@json_option
def success(
    token: str, output_text: str | None, output_file: str | None, url: str | None, as_json: bool
) -> None:
    """End the waiting Task with a result: its state goes on with it (ResultSelector,
    ResultPath, Next) as if its grain had returned it."""
    output = read_json_option("--output", output_text, output_file, default={})
    _send("success", lambda api: api.send_task_success(token, output), url, as_json)


@task.command("failure")
@_token_argument
@click.option(
    "--error", default=None, metavar="NAME", help="The error name (Retry/Catch match it)."
)
@click.option("--cause", default=None, metavar="TEXT", help="Why it failed, for a person.")
@url_option
@json_option
def failure(
    token: str, error: str | None, cause: str | None, url: str | None, as_json: bool
) -> None:
    """Fail the waiting Task with --error and --cause: its Retry and Catch apply as to any
    task error."""
    _send(
        "failure", lambda api: api.send_task_failure(token, error=error, cause=cause), url, as_json
    )


@task.command("heartbeat")
@_token_argument
@url_option
@json_option
def heartbeat(token: str, url: str | None, as_json: bool) -> None:
    """Say that the work of the waiting Task goes on: its HeartbeatSeconds clock starts
    again (its TimeoutSeconds does not)."""
    _send("heartbeat", lambda api: api.send_task_heartbeat(token), url, as_json)


def _send(action: str, call: Callable[[SandClient], str], url: str | None, as_json: bool) -> None:
    """``call`` on the gateway's client, and its answer reported; a refusal ends the command
    with its message (``api_call``: a 409 names the status, a 429 says when to retry)."""
    api = client(url)
    _report(action, api_call(lambda: call(api)), as_json)


COMMANDS: list[click.Command] = [task]

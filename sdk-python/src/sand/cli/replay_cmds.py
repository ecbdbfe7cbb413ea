"""``sand replay``: an execution of the cluster run again here, to debug it (issue 23).

Exit status: 0 the local run matched the recorded one, 1 it differs (the first difference on
stdout), 2 the replay cannot run (the API refused, the history is truncated, the local app is
not the execution's, a bad option), 3 an internal error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from sand.cli.api import api_call, client, url_option
from sand.cli.dev_cmds import (
    EXIT_FAILED,
    EXIT_UNUSABLE,
    configure_grain_logging,
    fail,
    guarded,
    step_printer,
)
from sand.cli.output import emit_json, json_option
from sand.cli.output import stderr as _stderr
from sand.client import SandClient


@click.command("replay")
@click.argument("execution_id")
@click.option(
    "--app",
    "app_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The local copy of the execution's app: its workflows and grains run here.",
)
@click.option(
    "--from",
    "from_state",
    help="Start at this top-level state, with the input and variables it was entered with.",
)
@click.option(
    "--grain",
    "grains",
    multiple=True,
    help="Run this grain here for real instead of answering it as recorded (repeatable): a"
    " breakpoint in it stops.",
)
@click.option("--wait", is_flag=True, help="Waits and retry intervals take their real time.")
@click.option("--trace", is_flag=True, help="Print each event of the local run on stderr.")
@url_option
@json_option
def replay_cmd(
    execution_id: str,
    app_dir: Path,
    from_state: str | None,
    grains: tuple[str, ...],
    wait: bool,
    trace: bool,
    url: str | None,
    as_json: bool,
) -> None:
    """Run execution EXECUTION_ID of the cluster again on this machine, and say where the
    local run first differs from the recorded one.

    The workflow of the app in --app runs under the emulator on the execution's recorded
    input; every task is answered with what its grain answered on the cluster (its result or
    its error, call by call, retries and Map items included), except the grains named with
    --grain, which run here. A task that never ended on the cluster (the execution was
    stopped) runs here too. A redriven execution replays its first run. Exits 0 when the local
    run matches the recorded one, 1 when it differs (the first difference is printed), 2 when
    it cannot be replayed (the reason is printed).
    """
    api = client(url)
    document = api_call(lambda: api.execution(execution_id))
    events, truncated = api_call(lambda: _history(api, execution_id))

    def body() -> int:
        from sand.app import AppError
        from sand.replay import Recording, ReplayError, replay

        configure_grain_logging(verbose=trace)
        try:
            recording = Recording.of(
                {
                    "execution_id": document.execution_id,
                    "app": document.app or "",
                    "workflow": document.workflow or "",
                },
                events,
                truncated=truncated,
            )
            result = replay(
                app_dir,
                recording,
                from_state=from_state,
                grains=grains,
                skip_waits=not wait,
                trace=_printer() if trace else None,
            )
        except AppError as exc:
            fail(EXIT_UNUSABLE, [str(p) for p in exc.problems])
        except ReplayError as exc:
            fail(EXIT_UNUSABLE, str(exc))
        ended = recording.ended()
        if as_json:
            emit_json(
                {
                    "execution_id": execution_id,
                    "recorded": dict(ended) if ended is not None else None,
                    "local": result.local.to_json(),
                    "local_status": result.local.status,
                    "compared": result.compared,
                    "ran_here": list(result.ran_here),
                    "difference": None
                    if result.difference is None
                    else {
                        "path": result.difference.path,
                        "state": result.difference.state,
                        "recorded": result.difference.recorded,
                        "local": result.difference.local,
                    },
                },
                indent=None,
            )
        else:
            _report(result, ended)
        return 0 if result.difference is None else EXIT_FAILED

    guarded(body)


def _history(api: SandClient, execution_id: str) -> tuple[list[dict[str, Any]], bool]:
    """Every recorded event of the execution, and whether the history hit its cap."""
    events: list[dict[str, Any]] = []
    page: str | None = None
    while True:
        listed = api.history(execution_id, limit=1000, page=page)
        events.extend(e.to_json() for e in listed.events)
        if listed.truncated:
            return events, True
        if not listed.next_page:
            return events, False
        page = listed.next_page


def _printer() -> Callable[[Mapping[str, Any]], None]:
    show = step_printer()
    return lambda event: show(dict(event))


def _report(result: Any, ended: Mapping[str, Any] | None) -> None:
    err = _stderr()
    for line in result.ran_here:
        err.print(f"ran here: {escape(line)}")
    recorded = "still running" if ended is None else _end(ended)
    local = result.local
    mine = (
        f"SUCCEEDED {escape(str(local.output))}"
        if local.ok
        else f"FAILED {escape(str(local.error))}: {escape(str(local.cause))}"
    )
    click.echo(f"recorded: {recorded}")
    click.echo(f"local:    {mine}")
    if result.difference is None:
        click.echo(f"no difference: {result.compared} events of the states matched")
    else:
        click.echo(result.difference.describe())


def _end(event: Mapping[str, Any]) -> str:
    kind = str(event.get("type"))
    if kind == "ExecutionSucceeded":
        return f"SUCCEEDED {escape(str(event.get('output')))}"
    status = "ABORTED" if kind == "ExecutionAborted" else "FAILED"
    return f"{status} {escape(str(event.get('error')))}: {escape(str(event.get('cause')))}"


COMMANDS: list[click.Command] = [replay_cmd]

"""Application commands against a running cluster: deploy, undeploy, apps, invoke, result, logs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from sand.app import AppError, load_app
from sand.cli.api import api_call, client, url_option
from sand.client import Execution
from sand.contracts import ExecutionStatus

_err = Console(stderr=True, highlight=False)
_out = Console(highlight=False)


@click.command()
@click.argument("app_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--backend",
    type=click.Choice(["docker", "process"]),
    default=None,
    help="Sandbox backend (default: the cluster's sandbox.backend).",
)
@click.option(
    "--placement",
    "placement_json",
    default=None,
    metavar="JSON",
    help='Replaces app.yaml\'s placement, e.g. \'{"hosts": ["host-1", "host-2"]}\'.',
)
@url_option
def deploy(app_dir: Path, backend: str | None, placement_json: str | None, url: str | None) -> None:
    """Validate APP_DIR, upload it and wait until its sandbox is running."""
    placement = None
    if placement_json is not None:
        try:
            placement = json.loads(placement_json)
        except ValueError as exc:
            _err.print(f"[red]error:[/red] --placement is not JSON: {exc}")
            raise SystemExit(2) from None
    try:
        spec = load_app(app_dir, placement=placement)
    except AppError as exc:
        _err.print(f"[red]{app_dir}: the application is invalid[/red]")
        for problem in exc.problems:
            _err.print(f"  {problem}")
        raise SystemExit(2) from None
    started = time.monotonic()
    with _err.status(f"deploying {spec.name}") as status:

        def progress(line: dict[str, Any]) -> None:
            phase = line.get("phase") or line.get("status")
            status.update(f"deploying {spec.name}: {phase} ({time.monotonic() - started:.1f} s)")
            if phase and line.get("status") not in ("deployed", "failed"):
                _err.print(f"[dim]{time.monotonic() - started:5.1f} s  {phase}[/dim]")

        app = api_call(
            lambda: client(url).deploy(app_dir, progress, backend=backend, placement=placement)
        )
    _err.print(
        f"deployed {app['name']} ({', '.join(app.get('grains', []))}) "
        f"in {time.monotonic() - started:.1f} s"
    )
    _out.print_json(json.dumps(app))


@click.command()
@click.argument("app")
@url_option
def undeploy(app: str, url: str | None) -> None:
    """Remove APP: its sandbox, workers, queues and metadata."""
    api_call(lambda: client(url).undeploy(app))
    _err.print(f"undeployed {app}")


@click.command()
@url_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def apps(url: str | None, as_json: bool) -> None:
    """List the deployed applications."""
    listed = api_call(lambda: client(url).apps())
    if as_json:
        _out.print_json(json.dumps(listed))
        return
    table = Table(title="applications")
    for column in ("app", "grains", "workflows", "backend", "state"):
        table.add_column(column)
    for app in listed:
        table.add_row(
            app["name"],
            ", ".join(app.get("grains", [])),
            ", ".join(app.get("workflows", {})),
            str(app.get("backend", "")),
            str(app.get("state", "")),
        )
    _out.print(table)


@click.command()
@click.argument("app")
@click.option(
    "--workflow", "-w", default=None, help="Workflow to run (default: the app's default)."
)
@click.option("--input", "input_json", default=None, help="Input as a JSON document.")
@click.option("--input-file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--async", "is_async", is_flag=True, help="Return the execution id at once.")
@click.option(
    "--via",
    type=click.Choice(["local", "kafka"]),
    default=None,
    help="Entry path: the local bus (default) or the entry grain's Kafka topic.",
)
@url_option
def invoke(
    app: str,
    workflow: str | None,
    input_json: str | None,
    input_file: Path | None,
    is_async: bool,
    via: str | None,
    url: str | None,
) -> None:
    """Run a workflow of APP; print its output as one JSON line (exit 0), or
    {"Error", "Cause"} when it failed (exit 1)."""
    payload = _read_input(input_json, input_file)
    execution = api_call(
        lambda: client(url).invoke(app, payload, workflow=workflow, wait=not is_async, via=via)
    )
    if is_async:
        print(json.dumps({"execution_id": execution.execution_id}))
        return
    _print_execution(execution)


@click.command()
@click.argument("execution_id")
@url_option
def result(execution_id: str, url: str | None) -> None:
    """Print the result of an execution (exit 0 succeeded, 1 failed, 3 still running)."""
    _print_execution(api_call(lambda: client(url).result(execution_id)))


@click.command()
@click.argument("app")
@click.option("--tail", default=200, show_default=True, help="Lines to show.")
@url_option
def logs(app: str, tail: int, url: str | None) -> None:
    """Show the logs of APP's sandbox (grain workers, tracebacks, restarts)."""
    print(api_call(lambda: client(url).logs(app, tail)), end="")


def _read_input(input_json: str | None, input_file: Path | None) -> Any:
    if input_json is not None and input_file is not None:
        raise click.UsageError("give --input or --input-file, not both")
    source, text = (
        ("--input", input_json) if input_file is None else (str(input_file), input_file.read_text())
    )
    if text is None:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"{source} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def _print_execution(execution: Execution) -> None:
    if execution.status == ExecutionStatus.SUCCEEDED:
        print(json.dumps(execution.output))
        return
    if execution.status == ExecutionStatus.FAILED:
        print(json.dumps({"Error": execution.error, "Cause": execution.cause}))
        raise SystemExit(1)
    print(json.dumps({"execution_id": execution.execution_id, "status": execution.status}))
    sys.exit(3)


COMMANDS: list[click.Command] = [deploy, undeploy, apps, invoke, result, logs]

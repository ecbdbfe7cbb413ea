"""Application commands against a running cluster: deploy, undeploy, apps, app show,
invoke, result, logs."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.table import Table
from rich.text import Text

from sand.app import AppError, load_app
from sand.cli.api import app_call, client, complete_app_name, fail, refused, url_option
from sand.cli.inputs import STDIN, read_json_input
from sand.cli.output import emit_json, error_exit, json_mode, json_option, say, stderr, stdout
from sand.client import Execution, SandApiError, SandClient
from sand.contracts import ExecutionStatus
from sand.suggest import did_you_mean


@click.command()
@click.argument("source", metavar="APP", type=click.Path(exists=True, allow_dash=True))
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
@json_option
def deploy(
    source: str, backend: str | None, placement_json: str | None, url: str | None, as_json: bool
) -> None:
    """Validate APP, upload it and wait until its sandbox is running; print one line saying
    what runs (--json: the app's whole document).

    APP is an application directory, a tar archive of one, or '-' for a tar archive on
    stdin (`tar -C hello -c . | sand deploy -`)."""
    placement = None
    if placement_json is not None:
        try:
            placement = json.loads(placement_json)
        except ValueError as exc:
            error_exit(f"--placement is not JSON: {exc}", 2)
    with _app_dir(source) as app_dir:
        # an unpacked archive's problems name the archive, not the temporary directory
        shown = "stdin" if source == STDIN else source

        def located(problem: object) -> str:
            return str(problem).replace(str(app_dir), shown)

        try:
            load_app(app_dir, placement=placement)
        except AppError as exc:
            _invalid(shown, [located(problem) for problem in exc.problems])
        started = time.monotonic()

        def progress(line: dict[str, Any]) -> None:
            phase = line.get("phase") or line.get("status")
            if phase and line.get("status") not in ("deployed", "failed"):
                say(f"{time.monotonic() - started:5.1f} s  {phase}", style="dim")

        try:
            app = client(url).deploy(app_dir, progress, backend=backend, placement=placement)
        except SandApiError as exc:
            problems = exc.body.get("problems") if isinstance(exc.body, dict) else None
            if problems:
                _invalid(shown, [located(problem) for problem in problems])
            fail(exc)
    if json_mode():
        emit_json(app)
        return
    say(_deployed(app, time.monotonic() - started))


def _deployed(app: dict[str, Any], seconds: float) -> str:
    """One line for a person: what was deployed, which version, what it runs."""
    grains = ", ".join(app.get("grains", [])) or "no grains"
    workflows = ", ".join(sorted(app.get("workflows", {}))) or "none"
    version = f" version {app['version']}" if app.get("version") is not None else ""
    backend = f" on {app['backend']}" if app.get("backend") else ""
    return (
        f"deployed {app.get('name')}{version}{backend} in {seconds:.1f} s: "
        f"grains {grains}; workflows {workflows} (`sand app show {app.get('name')}` for more)"
    )


def _invalid(source: str, problems: list[str]) -> NoReturn:
    """End ``deploy`` of an invalid app: every problem, as it is (no markup), exit 2."""
    if json_mode():
        error_exit(f"{source}: the application is invalid\n" + "\n".join(problems), 2)
    say(f"{source}: the application is invalid", style="red")
    for problem in problems:
        say(f"  {problem}")
    raise SystemExit(2)


@contextlib.contextmanager
def _app_dir(source: str) -> Iterator[Path]:
    """The application directory ``source`` names: itself, or a tar archive (a file, or
    stdin for ``-``) unpacked into a temporary directory for the block."""
    path = Path(source)
    if source != STDIN and path.is_dir():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="sand-deploy-") as tmp:
        try:
            data = click.get_binary_stream("stdin").read() if source == STDIN else path.read_bytes()
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
                # 'data': no absolute paths, no '..', no links out, no devices
                archive.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as exc:
            where = "stdin" if source == STDIN else source
            error_exit(f"{where}: not an application directory or tar archive: {exc}", 2)
        yield Path(tmp)  # outside the try: the block's own errors are its own


@click.command()
@click.argument("app", shell_complete=complete_app_name)
@url_option
@json_option
def undeploy(app: str, url: str | None, as_json: bool) -> None:
    """Remove APP: its sandbox, workers, queues and metadata."""
    api = client(url)
    app_call(api, app, lambda: api.undeploy(app))
    if as_json:
        emit_json({"undeployed": app})
        return
    say(f"undeployed {app}")


@click.command()
@url_option
@json_option
def apps(url: str | None, as_json: bool) -> None:
    """List the deployed applications."""
    api = client(url)
    try:
        listed = api.apps()
    except SandApiError as exc:
        fail(exc)
    if as_json:
        emit_json(listed)
        return
    table = Table(title="applications")
    for column in ("app", "grains", "workflows", "backend", "state"):
        table.add_column(column)
    for app in listed:
        table.add_row(
            *(
                _plain(value)
                for value in (
                    app["name"],
                    ", ".join(app.get("grains", [])),
                    ", ".join(app.get("workflows", {})),
                    str(app.get("backend", "")),
                    str(app.get("state", "")),
                )
            )
        )
    stdout().print(table)


@click.group(name="app")
def app_group() -> None:
    """One application: `sand app show APP`."""


@app_group.command(name="show")
@click.argument("app", shell_complete=complete_app_name)
@url_option
@json_option
def show_app(app: str, url: str | None, as_json: bool) -> None:
    """Show APP's metadata: owner, grains, workflows, limits, placement."""
    api = client(url)
    doc = app_call(api, app, lambda: api.app(app))
    if as_json:
        emit_json(doc)
        return
    table = Table(title=f"application {app}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, value in doc.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(_plain(key), _plain(text))
    stdout().print(table)


@click.command()
@click.argument("app", shell_complete=complete_app_name)
@click.option(
    "--workflow", "-w", default=None, help="Workflow to run (default: the app's default)."
)
@click.option(
    "--input",
    "input_json",
    default=None,
    help="Input as JSON ('-' reads stdin). Without --input or --input-file: {}.",
)
@click.option(
    "--input-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Read the input JSON from this file ('-' reads stdin).",
)
@click.option(
    "--async",
    "is_async",
    is_flag=True,
    help='Print the execution\'s id at once (with --json: {"execution_id"}), not its output.',
)
@click.option(
    "--trace",
    is_flag=True,
    help="Record where the time goes: a table of the per-grain spans on stderr "
    '(with --json: "trace" in the document).',
)
@click.option(
    "--via",
    type=click.Choice(["local", "kafka"]),
    default=None,
    help="Entry path: the local bus (default) or the entry grain's Kafka topic.",
)
@url_option
@json_option
def invoke(
    app: str,
    workflow: str | None,
    input_json: str | None,
    input_file: str | None,
    is_async: bool,
    trace: bool,
    via: str | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Run a workflow of APP with the input given (`{}` without one); print its output as one
    JSON line (exit 0), or {"Error", "Cause"} when it failed (exit 1, and on stderr the
    execution's id and the command that shows why). --json prints the whole execution
    {execution_id, status, output, error, cause} instead."""
    payload = read_json_input(input_json, input_file)
    api = client(url)
    try:
        if trace:
            execution = api.invoke(
                app, payload, workflow=workflow, wait=not is_async, via=via, trace=True
            )
        else:
            execution = api.invoke(app, payload, workflow=workflow, wait=not is_async, via=via)
    except SandApiError as exc:
        if exc.status == 404 and workflow is not None:
            _unknown_workflow(api, app, workflow, exc)
        refused(api, app, exc)
    if is_async:
        if as_json:
            emit_json({"execution_id": execution.execution_id}, indent=None)
        else:  # the bare id, for `ID=$(sand invoke APP --async)`
            click.echo(execution.execution_id)
            say(f"follow it with: sand execution show {execution.execution_id}")
        return
    spans = execution.trace if trace else None
    if spans is not None and not as_json:
        stderr().print(trace_table(spans))
    _print_execution(execution, {"trace": spans} if trace else {})


def _unknown_workflow(api: SandClient, app: str, workflow: str, exc: SandApiError) -> None:
    """When APP exists and has no WORKFLOW: say so and suggest the closest workflow."""
    try:
        names = list(api.app(app).get("workflows", {}))
    except SandApiError:
        return  # the app itself is unknown (or unreadable): app_call explains
    if workflow not in names:
        error_exit(
            f"application '{app}' has no workflow '{workflow}'"
            f"{did_you_mean(workflow, names)} (workflows: {', '.join(sorted(names))})",
            2,
            status=exc.status,
        )


@click.command()
@click.argument("execution_id")
@url_option
@json_option
def result(execution_id: str, url: str | None, as_json: bool) -> None:
    """Print the result of an execution (exit 0 succeeded, 1 failed, 3 still running)."""
    api = client(url)
    try:
        execution = api.result(execution_id)
    except SandApiError as exc:
        fail(exc)
    _print_execution(execution)


@click.command()
@click.argument("app", shell_complete=complete_app_name)
@click.option("--tail", default=200, show_default=True, help="Lines to show.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines (Ctrl-C stops).")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=1.0,
    show_default=True,
    help="With --follow: seconds between polls.",
)
@url_option
@json_option
def logs(
    app: str, tail: int, follow: bool, interval: float, url: str | None, as_json: bool
) -> None:
    """Show the logs of APP's sandbox (grain workers, tracebacks, restarts).

    --json prints {"app", "lines": [...]}; with --follow, one JSON line per log line."""
    api = client(url)
    # --follow reads the same window every time, so that two reads overlap
    window = max(tail, _FOLLOW_WINDOW) if follow else tail
    notes, output = _sections(app_call(api, app, lambda: api.logs(app, window)))
    if as_json and not follow:
        emit_json({"app": app, "lines": notes + output})
        return
    _print_lines(app, notes + output[-tail:], as_json)
    if not follow:
        return
    try:
        while True:
            time.sleep(interval)
            latest_notes, latest = _sections(app_call(api, app, lambda: api.logs(app, window)))
            _print_lines(app, new_lines(notes, latest_notes) + new_lines(output, latest), as_json)
            notes, output = latest_notes, latest
    except KeyboardInterrupt:
        return


# How many of the last lines each --follow poll reads: a burst of more lines than this
# between two polls loses the older ones (the API has no offset to read from).
_FOLLOW_WINDOW = 1000
# The host agent's own notes about the app (deploys, restarts) come first, every one of
# them; then the last lines of the sandbox's output.
_AGENT_NOTE = "[agent] "


def _sections(text: str) -> tuple[list[str], list[str]]:
    """The agent's notes and the sandbox's output lines of a logs answer: each grows only
    at its end, so each is followed on its own."""
    lines = text.splitlines()
    split = 0
    while split < len(lines) and lines[split].startswith(_AGENT_NOTE):
        split += 1
    return lines[:split], lines[split:]


def new_lines(before: list[str], after: list[str]) -> list[str]:
    """The lines of the window ``after`` that were not in the earlier window ``before``.

    Both are the last lines of the same log; ``after`` starts where ``before`` did or
    later. The largest overlap (a suffix of ``before`` that begins ``after``) is dropped;
    with none, everything in ``after`` is new."""
    for start in range(len(before)):
        overlap = len(before) - start
        if overlap <= len(after) and before[start:] == after[:overlap]:
            return after[overlap:]
    return after


def _print_lines(app: str, lines: list[str], as_json: bool) -> None:
    for line in lines:
        if as_json:
            click.echo(json.dumps({"app": app, "line": line}, ensure_ascii=False))
        else:
            click.echo(line)
    sys.stdout.flush()


def trace_table(trace: Any) -> Table:
    """The per-grain spans of an invocation's ``trace`` (``{"frontend_in": epoch s,
    "spans": [{"grain", "kind", "queued", "took", "start", "end", "pushed"}]}``, every time
    in epoch seconds) as a table: each moment in milliseconds after the frontend received
    the call, then how long the event waited in its queue and how long the grain ran."""
    moments = ("queued", "took", "start", "end", "pushed")
    table = Table(title="trace: ms after the frontend received the call")
    for column in ("grain", "kind", *moments, "waited", "ran"):
        table.add_column(column, justify="left" if column in ("grain", "kind") else "right")
    spans = trace.get("spans", []) if isinstance(trace, dict) else []
    origin = _seconds(trace.get("frontend_in")) if isinstance(trace, dict) else None

    def ms(later: float | None, earlier: float | None) -> str:
        return "-" if later is None or earlier is None else f"{(later - earlier) * 1000:.1f}"

    for span in sorted(spans, key=lambda s: _seconds(s.get("queued")) or 0.0):
        at = {moment: _seconds(span.get(moment)) for moment in moments}
        table.add_row(
            Text(str(span.get("grain", "?"))),
            Text(str(span.get("kind", ""))),
            *(ms(at[moment], origin) for moment in moments),
            ms(at["took"], at["queued"]),
            ms(at["end"], at["start"]),
        )
    return table


def _seconds(value: Any) -> float | None:
    """An epoch time in seconds as the trace carries it (a number, or a header's string)."""
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _print_execution(execution: Execution, extra: dict[str, Any] | None = None) -> None:
    """The execution on stdout: its output, {"Error", "Cause"}, or its id and status; the
    whole record (and ``extra``) under --json. Exit 0 succeeded, 1 failed, 3 not finished."""
    if json_mode():
        emit_json(
            {
                "execution_id": execution.execution_id,
                "status": execution.status,
                "output": execution.output,
                "error": execution.error,
                "cause": execution.cause,
                **(extra or {}),
            },
            indent=None,
        )
    elif execution.status == ExecutionStatus.SUCCEEDED:
        emit_json(execution.output, indent=None)
    elif execution.status == ExecutionStatus.FAILED:
        emit_json({"Error": execution.error, "Cause": execution.cause}, indent=None)
    else:
        emit_json({"execution_id": execution.execution_id, "status": execution.status}, indent=None)
    if execution.status != ExecutionStatus.SUCCEEDED and not json_mode():
        # what the failure's state, input and logs were: its history says
        say(
            f"execution {execution.execution_id} {str(execution.status).lower()}; to see why: "
            f"sand execution show {execution.execution_id}",
            style="dim",
        )
    if execution.status == ExecutionStatus.FAILED:
        raise SystemExit(1)
    if execution.status != ExecutionStatus.SUCCEEDED:
        raise SystemExit(3)


def _plain(text: str) -> Text:
    """A table cell shown as it is: rich would read '[...]' in it as markup."""
    return Text(text)


COMMANDS: list[click.Command] = [deploy, undeploy, apps, app_group, invoke, result, logs]

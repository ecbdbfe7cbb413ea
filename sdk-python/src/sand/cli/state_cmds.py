"""``sand test-state``: run one state of a workflow alone and show each processing step.

Exit codes: 0 the state succeeded, caught its error or would retry (SUCCEEDED,
CAUGHT_ERROR, RETRIABLE); 1 it failed (FAILED); 2 the test cannot run (unknown state,
native workflow, invalid app, bad JSON, a mock for a state that is no Task, usage error);
3 an internal error of SAND itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from sand import timeline
from sand.cli.dev_cmds import (
    EXIT_FAILED,
    EXIT_UNUSABLE,
    check_mock_options,
    configure_grain_logging,
    fail,
    guarded,
    step_printer,
)
from sand.cli.inputs import parse_json, read_json_input
from sand.cli.output import emit_json, json_option
from sand.cli.output import stdout as _stdout

# Labels of the inspection rows, in processing order (AWS TestState's names in brackets).
_ROWS = (
    ("input", "input"),
    ("after_input_path", "after InputPath"),
    ("after_parameters", "after Parameters"),
    ("after_arguments", "after Arguments"),
    ("result", "result"),
    ("after_result_selector", "after ResultSelector"),
    ("after_result_path", "after ResultPath"),
    ("output", "output"),
    ("variables", "variables"),
)
_STYLES = {
    "SUCCEEDED": "green",
    "CAUGHT_ERROR": "yellow",
    "RETRIABLE": "yellow",
    "FAILED": "red",
}


def _json_option_value(text: str | None, option: str) -> Any:
    return None if text is None else parse_json(text, option)


@click.command("test-state")
@click.argument("app_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("state")
@click.option("--workflow", "-w", help="Workflow of the state (default: 'main', or the only one).")
@click.option("--input", "input_text", help="The state's input, as JSON ('-' reads stdin).")
@click.option(
    "--input-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Read the input JSON from this file ('-' reads stdin).",
)
@click.option(
    "--variables", "variables_text", help='Workflow variables at entry, a JSON object: {"x": 1}.'
)
@click.option(
    "--mock-result", "mock_result_text", help="The Task's grain result, as JSON (not run)."
)
@click.option("--mock-error", help="The Task's grain fails with this error name (not run).")
@click.option("--mock-cause", help="The cause of --mock-error (default: empty).")
@click.option(
    "--mocks",
    "mocks_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A mock file for other grain calls (a Map's or Parallel's inner Tasks); needs --case.",
)
@click.option("--case", help="The test case of --mocks to use.")
@click.option("--trace", is_flag=True, help="Print each history event on stderr.")
@json_option
def test_state_cmd(
    app_dir: Path,
    state: str,
    workflow: str | None,
    input_text: str | None,
    input_file: str | None,
    variables_text: str | None,
    mock_result_text: str | None,
    mock_error: str | None,
    mock_cause: str | None,
    mocks_file: Path | None,
    case: str | None,
    trace: bool,
    as_json: bool,
) -> None:
    """Run STATE of a workflow of the app in APP_DIR alone, as AWS's TestState does.

    The state gets the input (default {}) and the variables given; a Task's grain is
    answered by --mock-result or --mock-error, or runs for real in a forked process. It
    stops at the first hand-over: its Next, a Catch, a Retry, the end or a failure. Prints
    the status, the output or error, the next state and a table of the value after each
    processing step (input, after InputPath, after Parameters or Arguments, result, after
    ResultSelector, after ResultPath, output, variables). --json prints {"state", "status",
    "output", "error", "cause", "next_state", "inspection"} instead.

    Exit 0: SUCCEEDED, CAUGHT_ERROR or RETRIABLE; 1: FAILED; 2: the test cannot run.
    """
    event = read_json_input(input_text, input_file)
    variables = _json_option_value(variables_text, "--variables")
    if variables is not None and not isinstance(variables, dict):
        raise click.BadParameter("must be a JSON object of variables", param_hint="--variables")
    mock_result = _json_option_value(mock_result_text, "--mock-result")
    if mock_result_text is not None and mock_error is not None:
        raise click.UsageError("give --mock-result or --mock-error, not both")
    if mock_cause is not None and mock_error is None:
        raise click.UsageError("--mock-cause needs --mock-error")
    check_mock_options(mocks_file, case)

    def body() -> int:
        from sand.app import AppError
        from sand.emulator import EmulationError
        from sand.mocks import MockError
        from sand.single_state import StateTestError, test_state

        configure_grain_logging(verbose=trace)
        kwargs: dict[str, Any] = {}
        if mock_result_text is not None:
            kwargs["mock_result"] = mock_result
        if mock_error is not None:
            kwargs["mock_error"] = (mock_error, mock_cause or "")
        try:
            result = test_state(
                app_dir,
                state,
                event,
                workflow,
                variables=variables,
                mocks=mocks_file,
                case=case,
                trace=step_printer() if trace else None,
                **kwargs,
            )
        except AppError as exc:
            fail(EXIT_UNUSABLE, [str(p) for p in exc.problems])
        except MockError as exc:
            fail(EXIT_UNUSABLE, list(exc.problems))
        except (StateTestError, EmulationError) as exc:
            fail(EXIT_UNUSABLE, str(exc).splitlines())
        document = result.to_json()
        if as_json:
            emit_json(document)
        else:
            _print(document)
        return EXIT_FAILED if document["status"] == "FAILED" else 0

    guarded(body)


def _print(document: dict[str, Any]) -> None:
    """The result as a header (status, next state or error) and a table of the steps."""
    console = _stdout()
    status = document["status"]
    style = _STYLES.get(status, "")
    head = f"[{style}]{status}[/{style}]  state {escape(document['state'])}"
    if "next_state" in document:
        head += f"  [dim]next[/dim] {escape(document['next_state'])}"
    console.print(head)
    if "error" in document:
        console.print(
            f"[red]{escape(str(document['error']))}[/red]: {escape(str(document['cause']))}"
        )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("step")
    table.add_column("value", overflow="fold")
    inspection = document["inspection"]
    for key, label in _ROWS:
        if key in inspection:
            table.add_row(label, timeline.short(inspection[key], limit=2000))
    console.print(table)


COMMANDS: list[click.Command] = [test_state_cmd]

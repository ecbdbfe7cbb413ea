"""Developer commands that need no running services: validate, emulate.

Exit codes: 0 success; 1 the execution failed (``emulate``) or the definition is
invalid (``validate``); 2 the command cannot run (bad input JSON, invalid app,
usage error); 3 an internal error of SAND itself; 130 interrupted. Nothing ends
in a bare traceback: errors are caught here, at the boundary, and printed as
one line per problem on stderr.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.markup import escape

from sand import timeline
from sand.cli.inputs import STDIN, read_json_input, read_text
from sand.cli.output import emit_json, error_exit, json_option, warn
from sand.cli.output import stderr as _stderr

EXIT_FAILED = 1
EXIT_UNUSABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def fail(code: int, lines: list[str] | str) -> NoReturn:
    error_exit(lines if isinstance(lines, str) else "\n".join(lines), code)


def guarded(body: Callable[[], int]) -> None:
    """Run a command body; turn every exception into a one-line error and an exit code."""
    try:
        code = body()
    except KeyboardInterrupt:
        fail(EXIT_INTERRUPTED, "interrupted")
    except click.exceptions.ClickException:
        raise
    except Exception as exc:
        fail(EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
    sys.exit(code)


# -- validate ----------------------------------------------------------------------------


@click.command("validate")
@click.argument("target", type=click.Path(exists=True, allow_dash=True))
@click.option(
    "--no-import",
    is_flag=True,
    help="Do not try to import the grains (their module-level code runs in a child process).",
)
@json_option
def validate_cmd(target: str, no_import: bool, as_json: bool) -> None:
    """Check a workflow file (JSON or YAML; '-' reads one from stdin) or an application
    directory.

    Prints "ok" and exits 0, or prints every problem and exits 1. For an application, each
    grain is also imported in a child process of its own: a grain that fails to import is
    a warning naming it, its file and the error (on the cluster it fails only the workflows
    that use it; its requirements may be missing here and present in the sandbox). --json
    prints {"ok", "problems", "warnings"}.
    """

    def body() -> int:
        from sand.app import AppError, load_app
        from sand.grain.runner import import_problems

        warnings: list[str] = []
        problems: list[str] = []
        if target != STDIN and Path(target).is_dir():
            try:
                app = load_app(target)
            except AppError as exc:
                problems = [str(p) for p in exc.problems]
            else:
                if not no_import:
                    paths = {name: grain.path for name, grain in app.grains.items()}
                    for name, why in import_problems(paths, app.root).items():
                        warnings.append(f"grain '{name}' does not import: {why}")
        else:
            problems = _workflow_problems(target)
        if as_json:
            emit_json({"ok": not problems, "problems": problems, "warnings": warnings})
            return EXIT_FAILED if problems else 0
        for warning in warnings:
            warn(warning)
        if problems:
            return _print_problems(problems)
        click.echo("ok")
        return 0

    guarded(body)


def _workflow_problems(target: str) -> list[str]:
    """Every problem of the workflow definition in file ``target`` (``-``: stdin)."""
    from sand_workflows import WorkflowError, load_workflow_text

    if target == STDIN:
        text = read_text(target, "TARGET")
        # the format is told by the file name; on stdin, by the first character
        source = "stdin.json" if text.lstrip().startswith("{") else "stdin.yaml"
    else:
        try:
            text = Path(target).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            return [f"{target}: not UTF-8 text: {exc.reason}"]
        except OSError as exc:
            return [f"{target}: cannot be read: {exc.strerror}"]
        source = target
    try:
        load_workflow_text(text, source=source)
    except WorkflowError as exc:
        return [str(p) for p in exc.problems]
    return []


def _print_problems(problems: list[str]) -> int:
    console = _stderr()
    for problem in problems:
        console.print(escape(problem))
    console.print(f"[red]{len(problems)} problem{'s' if len(problems) != 1 else ''}[/red]")
    return EXIT_FAILED


# -- emulate -----------------------------------------------------------------------------


@click.command("emulate")
@click.argument("app_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--workflow", "-w", help="Workflow to run (default: 'main', or the only one).")
@click.option("--input", "input_text", help="The execution's input, as JSON ('-' reads stdin).")
@click.option(
    "--input-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Read the input JSON from this file ('-' reads stdin).",
)
@click.option(
    "--trace", is_flag=True, help="Print each step (state, input, output, time) on stderr."
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Fire Wait states, retry intervals and the timeouts of unanswered callback tasks at once.",
)
@click.option(
    "--mocks",
    "mocks_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A mock file (YAML or JSON; see the SDK guide, 'Mocks'); needs --case.",
)
@click.option("--case", "case", help="The test case of the mock file to run; needs --mocks.")
@json_option
def emulate_cmd(
    app_dir: Path,
    workflow: str | None,
    input_text: str | None,
    input_file: str | None,
    trace: bool,
    no_wait: bool,
    mocks_file: Path | None,
    case: str | None,
    as_json: bool,
) -> None:
    """Run a workflow of the app in APP_DIR locally, each grain in a forked process.

    Prints the output as one JSON line on stdout and exits 0; a failed execution
    prints {"Error": ..., "Cause": ...} and exits 1. Without --input or --input-file
    the input is {}. --json prints the whole execution instead: {"execution_id",
    "workflow", "status", "output", "error", "cause", "duration_ms", "history"} (history:
    every event of every state, the cluster's shape).

    --mocks FILE --case NAME replace the grains that test case names by its canned
    results or errors (no process runs them; --trace shows "mocked RESPONSE"); the other
    grains run for real.
    """
    event = read_json_input(input_text, input_file)
    check_mock_options(mocks_file, case)

    def body() -> int:
        from sand.app import AppError
        from sand.emulator import EmulationError, emulate
        from sand.mocks import MockError

        configure_grain_logging(verbose=trace)
        try:
            result = emulate(
                app_dir,
                event,
                workflow,
                skip_waits=no_wait,
                trace=step_printer() if trace else None,
                mocks=mocks_file,
                case=case,
            )
        except AppError as exc:
            fail(EXIT_UNUSABLE, [str(p) for p in exc.problems])
        except MockError as exc:
            fail(EXIT_UNUSABLE, list(exc.problems))
        except EmulationError as exc:
            fail(EXIT_UNUSABLE, str(exc).splitlines())
        if as_json:
            document = {
                "execution_id": result.execution_id,
                "workflow": result.workflow,
                "status": result.status,
                "output": result.output,
                "error": result.error,
                "cause": result.cause,
                "duration_ms": round(result.duration_ms, 3),
                "history": list(result.steps),
            }
            emit_json(document, indent=None)
        else:
            emit_json(result.to_json(), indent=None)
        if trace:
            status = "[green]SUCCEEDED[/green]" if result.ok else "[red]FAILED[/red]"
            _stderr().print(
                f"{status} execution {escape(result.execution_id)} in {result.duration_ms:.1f} ms"
            )
        return 0 if result.ok else EXIT_FAILED

    guarded(body)


def check_mock_options(mocks_file: Path | None, case: str | None) -> None:
    """--mocks and --case go together: a usage error (exit 2) when only one is given."""
    if (mocks_file is None) != (case is None):
        given, missing = ("--mocks", "--case") if case is None else ("--case", "--mocks")
        raise click.UsageError(f"{given} needs {missing} (a mock file and one of its test cases)")


def step_printer() -> Callable[[dict[str, Any]], None]:
    """Prints each history event of an emulation on stderr, timed from the first."""
    console = _stderr()
    first: list[int] = []

    def show(event: dict[str, Any]) -> None:
        if not first:
            first.append(int(event.get("at_ms") or 0))
        console.print(timeline.line(event, first[0]), soft_wrap=True)

    return show


def configure_grain_logging(*, verbose: bool) -> None:
    """Grain logs go to stderr as key=value lines carrying the execution id.

    ``verbose`` adds DEBUG records, among them the tracebacks of failed grains.
    """
    from sand.grain.context import log_grains_to_stderr

    log_grains_to_stderr(
        "%(asctime)s level=%(levelname)s execution_id=%(execution_id)s grain=%(grain)s %(message)s",
        logging.DEBUG if verbose else logging.INFO,
    )


COMMANDS: list[click.Command] = [validate_cmd, emulate_cmd]

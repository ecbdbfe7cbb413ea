"""Developer commands that need no running services: validate, emulate.

Exit codes: 0 success; 1 the execution failed (``emulate``) or the definition is
invalid (``validate``); 2 the command cannot run (bad input JSON, invalid app,
usage error); 3 an internal error of SAND itself; 130 interrupted. Nothing ends
in a bare traceback: errors are caught here, at the boundary, and printed as
one line per problem on stderr.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from sand import timeline

EXIT_FAILED = 1
EXIT_UNUSABLE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def _stderr() -> Console:
    # Built per call: under click's CliRunner sys.stderr changes between invocations.
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def _fail(code: int, lines: list[str] | str) -> NoReturn:
    console = _stderr()
    for line in [lines] if isinstance(lines, str) else lines:
        console.print(f"[red]error:[/red] {escape(line)}")
    sys.exit(code)


def _guarded(body: Callable[[], int]) -> None:
    """Run a command body; turn every exception into a one-line error and an exit code."""
    try:
        code = body()
    except KeyboardInterrupt:
        _fail(EXIT_INTERRUPTED, "interrupted")
    except click.exceptions.ClickException:
        raise
    except Exception as exc:
        _fail(EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
    sys.exit(code)


# -- validate ----------------------------------------------------------------------------


@click.command("validate")
@click.argument("target", type=click.Path(exists=True, path_type=Path))
def validate_cmd(target: Path) -> None:
    """Check a workflow file (JSON or YAML) or an application directory.

    Prints "ok" and exits 0, or prints every problem and exits 1.
    """

    def body() -> int:
        from sand.app import AppError, load_app

        if target.is_dir():
            try:
                load_app(target)
            except AppError as exc:
                return _print_problems([str(p) for p in exc.problems])
        else:
            from sand_workflows import validate_workflow

            try:
                problems = validate_workflow(target)
            except UnicodeDecodeError as exc:
                return _print_problems([f"{target}: not UTF-8 text: {exc.reason}"])
            if problems:
                return _print_problems([str(p) for p in problems])
        click.echo("ok")
        return 0

    _guarded(body)


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
@click.option("--input", "input_text", help="The execution's input, as JSON.")
@click.option(
    "--input-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
    help="Read the input JSON from this file ('-' reads stdin).",
)
@click.option(
    "--trace", is_flag=True, help="Print each step (state, input, output, time) on stderr."
)
@click.option("--no-wait", is_flag=True, help="Fire Wait states and retry intervals at once.")
def emulate_cmd(
    app_dir: Path,
    workflow: str | None,
    input_text: str | None,
    input_file: Path | None,
    trace: bool,
    no_wait: bool,
) -> None:
    """Run a workflow of the app in APP_DIR locally, each grain in a forked process.

    Prints the output as one JSON line on stdout and exits 0; a failed execution
    prints {"Error": ..., "Cause": ...} and exits 1. Without --input or --input-file
    the input is {}.
    """
    event = _read_input(input_text, input_file)

    def body() -> int:
        from sand.app import AppError
        from sand.emulator import EmulationError, emulate

        _configure_grain_logging(verbose=trace)
        try:
            result = emulate(
                app_dir,
                event,
                workflow,
                skip_waits=no_wait,
                trace=_step_printer() if trace else None,
            )
        except AppError as exc:
            _fail(EXIT_UNUSABLE, [str(p) for p in exc.problems])
        except EmulationError as exc:
            _fail(EXIT_UNUSABLE, str(exc).splitlines())
        click.echo(json.dumps(result.to_json()))
        if trace:
            status = "[green]SUCCEEDED[/green]" if result.ok else "[red]FAILED[/red]"
            _stderr().print(
                f"{status} execution {escape(result.execution_id)} in {result.duration_ms:.1f} ms"
            )
        return 0 if result.ok else EXIT_FAILED

    _guarded(body)


def _read_input(input_text: str | None, input_file: Path | None) -> Any:
    if input_text is not None and input_file is not None:
        raise click.UsageError("give the input with --input or --input-file, not both")
    if input_file is not None:
        try:
            if str(input_file) == "-":
                text = click.get_text_stream("stdin").read()
            else:
                text = input_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(
                f"cannot read {input_file}: {exc}", param_hint="--input-file"
            ) from None
        where = "--input-file"
    elif input_text is not None:
        text, where = input_text, "--input"
    else:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if input_file is None:
            source = "the value"
        else:
            source = "stdin" if str(input_file) == "-" else str(input_file)
        raise click.BadParameter(
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            param_hint=where,
        ) from None


def _step_printer() -> Callable[[dict[str, Any]], None]:
    """Prints each history event of an emulation on stderr, timed from the first."""
    console = _stderr()
    first: list[int] = []

    def show(event: dict[str, Any]) -> None:
        if not first:
            first.append(int(event.get("at_ms") or 0))
        console.print(timeline.line(event, first[0]), soft_wrap=True)

    return show


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (CliRunner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _configure_grain_logging(*, verbose: bool) -> None:
    """Grain logs go to stderr as key=value lines carrying the execution id.

    ``verbose`` adds DEBUG records, among them the tracebacks of failed grains.
    """
    logger = logging.getLogger("sand.grain")
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    if any(isinstance(h, _StderrHandler) for h in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(
        logging.Formatter(
            "%(asctime)s level=%(levelname)s execution_id=%(execution_id)s "
            "grain=%(grain)s %(message)s",
            defaults={"execution_id": "-", "grain": "-"},
        )
    )
    logger.addHandler(handler)


COMMANDS: list[click.Command] = [validate_cmd, emulate_cmd]

"""How every command prints: data on stdout, messages on stderr, ``--json`` in one place.

The rules (README, "Scripting the CLI"):

- With ``--json`` a command prints exactly one JSON document on stdout and nothing else
  there; messages and progress go to stderr. An error is one JSON document on stderr,
  ``{"error": {"message": ..., "status": ...}}`` (``status``: the HTTP status when the
  server refused, else absent), and the exit status is not 0 (2: refused or unusable
  input, 1: failed, as without ``--json``).
- Machine-readable text (JSON, ids, tokens, paths) is never wrapped at the terminal's
  width: it is written with ``click.echo``, not laid out by rich.
- Text that comes from elsewhere (the server, a validation problem, a file name) is never
  read as rich markup: ``[a-z0-9-]+`` must stay ``[a-z0-9-]+``. Use :func:`say` and
  :func:`warn`, which escape it, or pass ``markup=False``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.markup import escape

F = TypeVar("F", bound=Callable[..., Any])

JSON_PARAM = "as_json"


def json_option(command: F) -> F:
    """``--json``: the command's data as one JSON document on stdout, errors as JSON."""
    return click.option(
        "--json",
        JSON_PARAM,
        is_flag=True,
        help="Print one JSON document on stdout (errors: JSON on stderr).",
    )(command)


def json_mode() -> bool:
    """Whether the running command (or a group above it) was given ``--json``."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if ctx.params.get(JSON_PARAM):
            return True
        ctx = ctx.parent
    return False


def stdout() -> Console:
    """A console on stdout for tables and human text; never wraps a long line."""
    # Built per call: rich resolves sys.stdout at construction, and click's CliRunner
    # swaps it between invocations.
    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def stderr() -> Console:
    """A console on stderr for messages and progress; never wraps a long line."""
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def emit_json(document: Any, *, indent: int | None = 2) -> None:
    """Print ``document`` as JSON on stdout, plainly (no colour, no wrapping)."""
    click.echo(json.dumps(document, indent=indent, ensure_ascii=False))


def say(message: str, *, style: str | None = None) -> None:
    """One line of human text on stderr; ``message`` is shown as it is (no markup)."""
    text = escape(message)
    stderr().print(f"[{style}]{text}[/{style}]" if style else text)


def warn(message: str) -> None:
    """``warning: message`` on stderr (suppressed from stdout in every mode)."""
    stderr().print(f"[yellow]warning:[/yellow] {escape(message)}")


def error_exit(
    message: str,
    code: int,
    *,
    status: int | None = None,
    label: str = "error",
    extra: dict[str, Any] | None = None,
) -> NoReturn:
    """End the command: ``label: message`` on stderr (JSON under ``--json``, with ``extra``'s
    fields beside ``message`` and ``status``), exit ``code``."""
    if json_mode():
        error: dict[str, Any] = {"message": message}
        if status is not None:
            error["status"] = status
        error.update(extra or {})
        click.echo(json.dumps({"error": error}, ensure_ascii=False), err=True)
    else:
        console = stderr()
        for line in message.splitlines() or [""]:
            console.print(f"[red]{escape(label)}:[/red] {escape(line)}")
    raise SystemExit(code)

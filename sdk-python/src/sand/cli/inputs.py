"""Reading what a command is given: a file, or stdin when the file is ``-``."""

from __future__ import annotations

import json
from typing import Any

import click

STDIN = "-"


def read_text(path: str, param_hint: str) -> str:
    """The UTF-8 text of ``path``, or of stdin when it is ``-``; a usage error otherwise."""
    try:
        if path == STDIN:
            return click.get_text_stream("stdin").read()
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint=param_hint) from None


def read_json_input(input_text: str | None, input_file: str | None) -> Any:
    """An execution's input: ``--input JSON`` (``--input -``: stdin) or ``--input-file
    PATH`` (``-``: stdin); ``{}`` when neither is given."""
    return read_json_option("--input", input_text, input_file, default={})


def read_json_option(option: str, text: str | None, path: str | None, *, default: Any) -> Any:
    """A JSON value given as ``OPTION JSON`` (``OPTION -``: stdin) or ``OPTION-file PATH``
    (``-``: stdin); ``default`` when neither is given. A usage error names the option."""
    file_option, noun = f"{option}-file", option.lstrip("-")
    if text is not None and path is not None:
        raise click.UsageError(f"give the {noun} with {option} or {file_option}, not both")
    if text == STDIN:
        text, path = None, STDIN
    if path is not None:
        text, where = read_text(path, file_option), file_option
        source = "stdin" if path == STDIN else path
    elif text is not None:
        where, source = option, "the value"
    else:
        return default
    return parse_json(text, where, f"{source} is not valid JSON")


def parse_json(text: str, param_hint: str, what: str = "not valid JSON") -> Any:
    """``text`` parsed as JSON; a usage error naming ``param_hint`` and where it breaks."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"{what}: {exc.msg} at line {exc.lineno} column {exc.colno}",
            param_hint=param_hint,
        ) from None

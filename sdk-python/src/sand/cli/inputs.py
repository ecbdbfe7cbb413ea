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
    if input_text is not None and input_file is not None:
        raise click.UsageError("give the input with --input or --input-file, not both")
    if input_text == STDIN:
        input_text, input_file = None, STDIN
    if input_file is not None:
        text, where = read_text(input_file, "--input-file"), "--input-file"
        source = "stdin" if input_file == STDIN else input_file
    elif input_text is not None:
        text, where, source = input_text, "--input", "the value"
    else:
        return {}
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

"""What a grain prints, tagged with its execution and grain.

The app's log (``GET /v1/apps/{app}/logs``) mixes every instance of every grain; the GUI
shows a state's own lines by looking for ``execution_id=<id> grain=<name>`` in them (issue
14), and ``path=<path>`` where the task ran inside a Parallel branch or a Map item, so that
one item's panel does not show its siblings' lines (issue 24). A grain's ``print`` and
writes to ``sys.stderr`` during its handler get that prefix on every line."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO, cast


class LineTagger(io.TextIOBase):
    """Writes through to ``target`` with ``prefix`` at the start of each line."""

    def __init__(self, target: TextIO, prefix: str) -> None:
        self._target = target
        self._prefix = prefix
        self._at_line_start = True

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        parts = []
        for piece in text.splitlines(keepends=True):
            if self._at_line_start:
                parts.append(self._prefix)
            parts.append(piece)
            self._at_line_start = piece.endswith(("\n", "\r"))
        self._target.write("".join(parts))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def end_line(self) -> None:
        """Ends a line left open, so that the next writer's text starts a line of its own."""
        if not self._at_line_start:
            self._target.write("\n")
            self._at_line_start = True
        self._target.flush()


_UNSAFE_IN_PATH = re.compile(r"[%\s]")


def path_tag(path: str) -> str:
    """``path`` as one word: ``%`` and whitespace (a state name may hold spaces) as ``%XX``
    of their code point. The GUI's ``pathTag`` (``frontend/ui/src/lib/history.ts``) is the
    same rule."""
    return _UNSAFE_IN_PATH.sub(lambda m: f"%{ord(m.group()):02X}", path)


def line_prefix(execution_id: str, grain: str, path: str = "") -> str:
    """What every line a grain's instance writes starts with: the one format the GUI and
    ``sand logs`` look for. ``path`` (``history.path_of``) is empty at the top level."""
    where = f"path={path_tag(path)} " if path else ""
    return f"execution_id={execution_id} grain={grain} {where}"


def tagged(execution_id: str, grain: str, text: str, path: str = "") -> str:
    """``text`` with each of its lines tagged (a traceback the worker prints for a grain)."""
    prefix = line_prefix(execution_id, grain, path)
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines())


@contextmanager
def tagged_output(execution_id: str, grain: str, path: str = "") -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` tag each line with the execution, grain and path."""
    prefix = line_prefix(execution_id, grain, path)
    saved_out, saved_err = sys.stdout, sys.stderr
    out, err = LineTagger(saved_out, prefix), LineTagger(saved_err, prefix)
    sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved_out, saved_err
        out.end_line()
        err.end_line()

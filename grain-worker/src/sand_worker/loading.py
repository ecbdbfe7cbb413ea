"""Load the application in a forked child, so that the grain workers never hold the loaders.

``load_app`` parses YAML and validates every workflow: it imports the YAML parser, the
ASL and native loaders and their checks (~1.3 MB of memory, ~30 modules), none of which
an event needs. Loaded in the sandbox's main process, all of it would be in every grain
worker forked from there, and in every instance forked from those: more pages to map at
each fork, to unmap at each exit. :func:`load_app_apart` runs ``load_app`` in a child
that sends the result back pickled and exits; this process only imports the classes of
what it receives (decision 0025).
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import traceback
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sand.app import AppError, AppSpec

# The exit status of a loader child that failed otherwise than with AppError
_LOADER_FAILED = 70


def load_app_apart(app_dir: Path) -> AppSpec:
    """``sand.app.load_app(app_dir)``, run in a forked child. Blocks until the child ends.

    Raises :class:`AppError` with the problems ``load_app`` found, and RuntimeError when
    the child failed otherwise (its traceback is on stderr) or could not be forked.
    """
    for stream in (sys.stdout, sys.stderr):  # else the child could write them again
        stream.flush()
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:
        os.close(read_fd)
        _load_and_send(app_dir, write_fd)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise RuntimeError(
            f"the child that loads the app in {app_dir} failed "
            f"(exit status {os.waitstatus_to_exitcode(status)}); see its traceback above"
        )
    loaded, value = pickle.loads(data)
    if not loaded:
        raise AppError(list(value))
    assert isinstance(value, AppSpec)
    return value


def _load_and_send(app_dir: Path, fd: int) -> None:
    """In the child: load, pickle to ``fd`` — (True, AppSpec) or (False, its problems) —
    and leave through ``os._exit``."""
    code = _LOADER_FAILED
    try:
        from sand.app import load_app

        result: tuple[bool, Any]
        try:
            result = (True, load_app(app_dir))
        except AppError as exc:
            result = (False, exc.problems)
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        # AppSpec's mappings are read-only views, which pickle cannot rebuild by itself
        pickler.dispatch_table = {MappingProxyType: _reduce_read_only}
        pickler.dump(result)
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(buffer.getvalue())
        code = 0
    except BaseException:  # nothing may escape a forked child
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _reduce_read_only(view: MappingProxyType[Any, Any]) -> tuple[Any, tuple[Any, ...]]:
    return _read_only, (dict(view),)


def _read_only(mapping: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(mapping)

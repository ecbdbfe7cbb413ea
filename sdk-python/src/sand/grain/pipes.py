"""The parent's end of a task pipe, and reading a wake-up pipe empty.

A task pipe (parent to child, :mod:`sand.grain.channel` frames) is non-blocking and
large enough that a task is written whole at once: the monitoring loop never waits on a
child that does not read.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

# A task pipe's capacity (F_SETPIPE_SZ; Linux's default cap for an unprivileged process is
# 1 MiB): a task is written whole without blocking the parent's loop.
TASK_PIPE_BYTES = 1 << 20


def prepare_task_pipe(fd: int) -> None:
    """Make ``fd``, a task pipe's write end, take a task whole without blocking."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, TASK_PIPE_BYTES)
    os.set_blocking(fd, False)


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to non-blocking pipe ``fd``: at once when it fits, else blocking."""
    if len(data) <= TASK_PIPE_BYTES:
        if os.write(fd, data) != len(data):
            raise BlockingIOError("the task pipe is not empty: the child is not reading")
        return
    os.set_blocking(fd, True)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.set_blocking(fd, False)


def drain(fd: int) -> None:
    """Read a non-blocking pipe empty (a ``signal.set_wakeup_fd`` pipe after it woke a
    ``select``)."""
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while os.read(fd, 512):
            pass

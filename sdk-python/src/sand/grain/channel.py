"""The pipes between a forked grain instance and its parent: length-prefixed frames.

A frame is a one-byte :class:`Frame` kind, a 4-byte big-endian body length, then
the body. Two pipes, one each way:

- **parent → child** (only for children forked to serve tasks, the grain worker's):
  ``TASK`` frames, each the body of one task to run (its JSON is the worker's
  business). The parent closes its end to retire an idle instance;
- **child → parent**: for each task (or, in the emulator, the one invocation the
  child was forked for), at most a ``WROTE`` frame — what the grain wrote to the
  global data layer, as the parent must report it — then the ``RESULT``: the
  :class:`GrainResult`. A result ends the task: the instance is idle again (or exits).

The parent reads and writes frames in :class:`sand.grain.pool.Pool`.
"""

from __future__ import annotations

import os
import struct
from enum import Enum

from sand.grain.result import GrainResult, encode_result

HEADER = struct.Struct("!cI")


class Frame(bytes, Enum):
    TASK = b"K"
    WROTE = b"W"
    RESULT = b"R"


class ParentGone(Exception):
    """The child's parent has exited: nobody will read or explain what the child does."""


def frame(kind: Frame, body: bytes) -> bytes:
    return HEADER.pack(kind, len(body)) + body


class Channel:
    """The child's ends of its pipes. Writes block (the parent reads promptly).

    Every send raises :class:`ParentGone` when the parent has exited (broken pipe).
    """

    def __init__(self, fd: int, parent_pid: int, tasks_fd: int | None = None) -> None:
        self._fd = fd
        self._tasks_fd = tasks_fd
        self._parent_pid = parent_pid

    def parent_gone(self) -> bool:
        """Whether the parent that forked this child has exited (we were re-parented)."""
        return os.getppid() != self._parent_pid

    def next_task(self) -> bytes | None:
        """Block until the parent sends a task and return its body; None when the parent
        closed the pipe (retired this instance, or exited)."""
        if self._tasks_fd is None:
            raise ValueError("this child was not forked to serve tasks")
        header = _read_exactly(self._tasks_fd, HEADER.size)
        if header is None:
            return None
        kind, length = HEADER.unpack(header)
        body = _read_exactly(self._tasks_fd, length)
        if kind != Frame.TASK or body is None:
            return None  # not our parent's frame: leave
        return body

    def deliver(self, result: GrainResult, wrote: str | None = None) -> None:
        """Send the result of the task (and ``wrote``, the global data it wrote) at once."""
        data = frame(Frame.RESULT, encode_result(result))
        if wrote:
            data = frame(Frame.WROTE, wrote.encode()) + data
        self._send(data)

    def _send(self, data: bytes) -> None:
        # One write in the usual case: a blocking pipe takes the whole frame unless a
        # signal interrupts it.
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except BrokenPipeError:
            raise ParentGone(f"parent {self._parent_pid} closed the pipe") from None


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; None at its end."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)

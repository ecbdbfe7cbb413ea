"""The pipe from a forked grain instance to its parent: a few length-prefixed frames.

A frame is a one-byte :class:`Frame` kind, a 4-byte big-endian body length, then
the body. For each piece of work, a child sends at most one of each kind, in this
order:

- ``TOOK`` — it took work the parent did not give it (the grain worker's raw
  event, popped from the queue), so the parent can explain the event if the
  child dies;
- ``TASK`` — the grain is about to run task ``token`` with ``timeout_s``: the
  parent's deadline for the child starts now;
- ``RESULT`` — the :class:`GrainResult`, when the parent is the one to deliver it
  (the emulator). A grain worker's child publishes its results itself;
- ``DONE`` (empty) — only from an instance that serves several events in sequence
  (the reuse mode): it finished the work it took, delivered everything, and is idle
  again; the next ``TOOK`` starts its next piece of work.

The parent reads frames in :class:`sand.grain.pool.Pool`.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from enum import Enum

from sand.grain.result import GrainResult, encode_result

HEADER = struct.Struct("!cI")


class Frame(bytes, Enum):
    TOOK = b"T"
    TASK = b"K"
    RESULT = b"R"
    DONE = b"D"


class ParentGone(Exception):
    """The child's parent has exited: nobody will read or explain what the child does."""


@dataclass(frozen=True, slots=True)
class TaskStarted:
    """The body of a TASK frame."""

    token: str
    timeout_s: float

    def encode(self) -> bytes:
        return json.dumps({"token": self.token, "timeout_s": self.timeout_s}).encode()

    @classmethod
    def decode(cls, body: bytes) -> TaskStarted:
        doc = json.loads(body)
        return cls(token=str(doc["token"]), timeout_s=float(doc["timeout_s"]))


class Channel:
    """The child's end of the pipe. Writes block (the parent reads promptly).

    Every send raises :class:`ParentGone` when the parent has exited (broken pipe).
    """

    def __init__(self, fd: int, parent_pid: int) -> None:
        self._fd = fd
        self._parent_pid = parent_pid

    def parent_gone(self) -> bool:
        """Whether the parent that forked this child has exited (we were re-parented)."""
        return os.getppid() != self._parent_pid

    def took(self, work: bytes) -> None:
        self._send(Frame.TOOK, work)

    def task_started(self, token: str, timeout_s: float) -> None:
        self._send(Frame.TASK, TaskStarted(token, timeout_s).encode())

    def deliver(self, result: GrainResult) -> None:
        self._send(Frame.RESULT, encode_result(result))

    def done(self) -> None:
        self._send(Frame.DONE, b"")

    def _send(self, kind: Frame, body: bytes) -> None:
        # One write in the usual case: a blocking pipe takes the whole frame unless a
        # signal interrupts it.
        view = memoryview(HEADER.pack(kind, len(body)) + body)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except BrokenPipeError:
            raise ParentGone(f"parent {self._parent_pid} closed the pipe") from None

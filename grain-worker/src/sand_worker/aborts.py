"""The executions of this app stopped on request, as this worker last read them.

``POST /v1/executions/{id}/stop`` adds the execution to ``sand:aborted:<app>`` on every
host (decision 0018). The worker (the parent) reads that set every ``REFRESH_S`` while
it has work, and before the first event it takes after a quiet spell (decision 0030), and
publishes it in an anonymous shared mapping made before any instance is forked, so an
instance checks an event it took against it with no Redis round trip and no system call;
the parent kills instances already running one. A stop therefore reaches every event
within about ``REFRESH_S``; the one Redis check that is exact is made where it matters
most, before an instance writes an execution's result (``EventHandler``).

The mapping is written by the parent only, under a sequence lock: an odd sequence
means a write is in progress, and a reader that saw the sequence change reads again.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterable
from typing import Final

from sand import keys
from sand.localbus import LocalBus

REFRESH_S: Final = 0.25
# At most this many stopped executions are kept in view (the newest): 2,000 ids of up
# to 64 bytes fit the mapping.
MAX_IDS: Final = 2000
_SIZE: Final = 16 + MAX_IDS * 65
_HEADER: Final = struct.Struct("<QQ")  # sequence, length of the newline-joined ids


class AbortedExecutions:
    """Written by the worker, read by its forked instances (see module docstring)."""

    def __init__(self, app: str) -> None:
        self._key = keys.aborted_key(app)
        self._map = mmap.mmap(-1, _SIZE)  # MAP_SHARED | MAP_ANONYMOUS: shared across fork
        self._seen_seq = -1
        self._ids: frozenset[str] = frozenset()
        self._published: list[str] = []

    # -- the worker --------------------------------------------------------------------
    def refresh(self, client: LocalBus) -> frozenset[str]:
        """Read the app's stopped executions from Redis and publish them; returns them."""
        raw = client.zrevrange(self._key, 0, MAX_IDS - 1)
        ids = [i.decode() if isinstance(i, bytes) else str(i) for i in raw]
        if ids != self._published:
            self.publish(ids)
        return frozenset(ids)

    def publish(self, ids: Iterable[str]) -> None:
        listed = [i for i in ids if i and "\n" not in i][:MAX_IDS]
        body = "\n".join(listed).encode()[: _SIZE - _HEADER.size]
        seq, _ = _HEADER.unpack_from(self._map, 0)
        _HEADER.pack_into(self._map, 0, seq + 1, 0)  # odd: writing
        self._map[_HEADER.size : _HEADER.size + len(body)] = body
        _HEADER.pack_into(self._map, 0, seq + 2, len(body))
        self._published = listed

    # -- an instance -------------------------------------------------------------------
    def any(self) -> bool:
        """Whether any execution is stopped (one read of shared memory)."""
        seq, length = _HEADER.unpack_from(self._map, 0)
        return bool(length) or seq % 2 == 1

    def contains(self, execution_id: str) -> bool:
        """Whether ``execution_id`` was stopped, as of the worker's last refresh."""
        return execution_id in self._read()

    def _read(self) -> frozenset[str]:
        while True:
            seq, length = _HEADER.unpack_from(self._map, 0)
            if seq == self._seen_seq:
                return self._ids
            if seq % 2:
                continue  # the worker is writing: a few microseconds
            body = bytes(self._map[_HEADER.size : _HEADER.size + length])
            if _HEADER.unpack_from(self._map, 0)[0] != seq:
                continue
            self._ids = frozenset(body.decode().split("\n")) if body else frozenset()
            self._seen_seq = seq
            return self._ids

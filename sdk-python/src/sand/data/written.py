"""What a grain instance wrote to the global data layer: the metadata recovery checks.

The SAND paper backs up the metadata (name, size, hash) of the data an instance writes
to the global layer with its event, so that recovery can tell whether the event's
output already reached the global layer. :class:`RecordingDataStore` wraps the global
store of a grain process and notes, per key, the last put (size and SHA-256 of the
stored bytes) or delete; the grain worker takes the notes when an event is handled and
sends them with the event's FINISHED flag (header ``sand-data``, :func:`header_value`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass

from sand.data import DataStore


@dataclass(frozen=True, slots=True)
class DataWrite:
    """The last write of one key: a put (``size`` and ``sha256`` set) or a delete (both None)."""

    key: str
    size: int | None
    sha256: str | None

    @classmethod
    def put(cls, key: str, value: bytes) -> DataWrite:
        return cls(key, len(value), hashlib.sha256(value).hexdigest())

    @classmethod
    def deleted(cls, key: str) -> DataWrite:
        return cls(key, None, None)

    def to_json(self) -> dict[str, object]:
        """The header's form of it (the host agent's ``DataHeader`` reads it)."""
        if self.size is None:
            return {"key": self.key, "deleted": True}
        return {"key": self.key, "size": self.size, "sha256": self.sha256}


def header_value(writes: list[DataWrite]) -> str:
    """The ``sand-data`` header for ``writes``: a compact JSON list."""
    return json.dumps([w.to_json() for w in writes], separators=(",", ":"))


class RecordingDataStore:
    """A :class:`~sand.data.DataStore` that notes every successful put and delete of ``inner``.

    A failed call notes nothing (its outcome is unknown or nil). Thread-safe; the notes
    belong to the process that made them (a forked child starts from the parent's).
    """

    def __init__(self, inner: DataStore) -> None:
        self._inner = inner
        self._writes: dict[str, DataWrite] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        return self._inner.get(key)

    def put(self, key: str, value: bytes) -> None:
        self._inner.put(key, value)
        self._note(DataWrite.put(key, bytes(value)))

    def delete(self, key: str) -> bool:
        existed = self._inner.delete(key)
        self._note(DataWrite.deleted(key))
        return existed

    def keys(self, prefix: str = "") -> list[str]:
        return self._inner.keys(prefix)

    def take(self) -> list[DataWrite]:
        """The writes noted since the last ``take``, the last per key, in order of first write."""
        with self._lock:
            writes = list(self._writes.values())
            self._writes.clear()
        return writes

    def _note(self, write: DataWrite) -> None:
        with self._lock:
            self._writes[write.key] = write

"""In-memory data layers: one shared by forked processes, one for a single process.

A plain dict does not survive a fork: each child would write into its own copy.
:class:`MemoryDataServer` keeps the one dict in the process that creates it (the
emulator) and serves it over a Unix socket from a background thread;
:class:`MemoryDataStore` is the client handed to grains. A client opens its
connection lazily and again in every new process, so a store created in the
parent works unchanged in every forked grain.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import tempfile
import threading
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from sand.data import DataStoreError, Scope, check_scope

_Namespace = tuple[str, str]


class DictDataStore:
    """A :class:`~sand.data.DataStore` in a dict. One process only: not fork-shared."""

    def __init__(self) -> None:
        self._values: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._values.get(key)

    def put(self, key: str, value: bytes) -> None:
        with self._lock:
            self._values[key] = bytes(value)

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._values.pop(key, None) is not None

    def keys(self, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self._values if k.startswith(prefix))


class MemoryDataServer:
    """Owns the data of one emulation and serves it to forked grain processes.

    Thread-safe. Start it before forking (``with MemoryDataServer() as server:``);
    ``close`` stops serving and removes the socket. Values live as long as the server.
    """

    def __init__(self) -> None:
        self._values: dict[_Namespace, dict[str, bytes]] = {}
        self._lock = threading.Lock()
        self._dir = tempfile.mkdtemp(prefix="sand-data-")
        self._address = str(Path(self._dir) / "data.sock")
        self._authkey = secrets.token_bytes(16)
        self._listener: Listener | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def __enter__(self) -> MemoryDataServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Listen and serve from a daemon thread. Idempotent."""
        if self._listener is not None:
            return
        self._listener = Listener(self._address, family="AF_UNIX", authkey=self._authkey)
        self._thread = threading.Thread(
            target=self._accept_loop, name="sand-data-server", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop accepting clients and remove the socket; the values stay readable here.

        Blocks until the accept thread has ended (at most about a second).
        """
        self._closed.set()
        if self._listener is not None:
            # Closing a listening socket does not wake a thread blocked in accept();
            # a connection does, and the thread then sees _closed.
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as waker:
                waker.settimeout(1.0)
                waker.connect(self._address)
            if self._thread is not None:
                self._thread.join(timeout=1.0)
            with contextlib.suppress(OSError):
                self._listener.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def store(self, app: str, scope: Scope) -> MemoryDataStore:
        """A client store for ``app`` in ``scope``; usable in this process and forked ones."""
        check_scope(scope)
        return MemoryDataStore(self._address, self._authkey, (app, scope))

    def snapshot(self, app: str, scope: Scope) -> dict[str, bytes]:
        """A copy of the raw values of ``app`` in ``scope`` (read in the server's process)."""
        with self._lock:
            return dict(self._values.get((app, scope), {}))

    # -- serving -------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                conn = self._listener.accept()
            except Exception:
                # A client that failed the handshake or died during it (the closing
                # waker does too): keep serving unless closed.
                if self._closed.is_set():
                    return
                continue
            if self._closed.is_set():
                conn.close()
                return
            threading.Thread(
                target=self._serve, args=(conn,), name="sand-data-conn", daemon=True
            ).start()

    def _serve(self, conn: Connection) -> None:
        with conn:
            while True:
                try:
                    request = conn.recv()
                except (EOFError, OSError):
                    return  # the grain process exited
                try:
                    reply: tuple[bool, Any] = (True, self._apply(*request))
                except Exception as exc:  # sent back to the client
                    reply = (False, f"{type(exc).__name__}: {exc}")
                try:
                    conn.send(reply)
                except OSError:
                    return

    def _apply(self, op: str, namespace: _Namespace, key: str, value: bytes | None) -> Any:
        with self._lock:
            values = self._values.setdefault(tuple(namespace), {})  # type: ignore[arg-type]
            if op == "get":
                return values.get(key)
            if op == "put":
                assert value is not None
                values[key] = value
                return None
            if op == "delete":
                return values.pop(key, None) is not None
            if op == "keys":
                return sorted(k for k in values if k.startswith(key))
        raise ValueError(f"unknown operation {op!r}")


class MemoryDataStore:
    """Client of a :class:`MemoryDataServer` for one application and scope.

    Fork-safe: the connection belongs to the process that opened it; a forked child
    opens its own on first use. Thread-safe within a process. Raises
    :class:`~sand.data.DataStoreError` when the server is gone.
    """

    def __init__(self, address: str, authkey: bytes, namespace: _Namespace) -> None:
        self._address = address
        self._authkey = authkey
        self._namespace = namespace
        self._pid = -1
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        result: bytes | None = self._call("get", key)
        return result

    def put(self, key: str, value: bytes) -> None:
        self._call("put", key, bytes(value))

    def delete(self, key: str) -> bool:
        return bool(self._call("delete", key))

    def keys(self, prefix: str = "") -> list[str]:
        return list(self._call("keys", prefix))

    def _call(self, op: str, key: str, value: bytes | None = None) -> Any:
        if self._pid != os.getpid():
            # Inherited across a fork: the parent's connection and lock are not ours
            # (another thread may have held the lock at fork time). Start afresh.
            self._lock = threading.Lock()
            self._conn = None
            self._pid = os.getpid()
        app, scope = self._namespace
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = Client(self._address, family="AF_UNIX", authkey=self._authkey)
                self._conn.send((op, self._namespace, key, value))
                ok, result = self._conn.recv()
            except (OSError, EOFError) as exc:
                self._conn = None
                raise DataStoreError(
                    f"data layer ({scope}, app '{app}'): {op} {key!r} failed: "
                    f"the emulator's data server is unreachable ({exc})"
                ) from None
        if not ok:
            raise DataStoreError(
                f"data layer ({scope}, app '{app}'): {op} {key!r} failed: {result}"
            )
        return result

"""The grain worker's client of its host's Redis: RESP2 over the unix socket, with hiredis.

Every fork-per-event instance opens its own connection and sends a handful of commands, so
what a client costs in a freshly forked child is paid per event. Measured on this kind of VM
(decision 0028): a PING and a three-command pipeline through redis-py cost a fresh child
~3.5 ms of CPU and ~270 copy-on-write faults more than the same commands written to the
socket, and importing redis-py brings asyncio, ssl and importlib.metadata into the zygote
(8 of its 20 MB of anonymous memory). This client encodes with ``hiredis.pack_command`` and
parses with ``hiredis.Reader`` (the maintained C protocol library redis-py itself uses when
it is installed) and offers only the commands SAND's worker sends.

Semantics follow redis-py's (``decode_responses=False``) where both have the command:
replies are bytes, ``brpop`` gives ``(key, value)`` or None, ``zscore`` a float or None,
``set`` True, a pipeline sends its commands in one write and raises the first error reply
once every reply is read. A connection that fails is closed and the error raised as
:class:`BusUnreachable`; the next command connects again. A forked child never touches its
parent's connection: it opens its own at its first command. Not thread-safe (one per
process, as the worker uses it).
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import hiredis

_NO_REPLY = False  # what hiredis.Reader.gets() answers while a reply is incomplete
_READ_BYTES = 1 << 16

Parse = Callable[[Any], Any]


class BusError(Exception):
    """Any failure of a command: the bus was unreachable or refused it."""


class BusUnreachable(BusError):
    """The connection could not be made, or broke during the command."""


class ReplyError(BusError):
    """Redis answered the command with an error (``-ERR ...``, ``-NOSCRIPT ...``)."""


def _ok(reply: Any) -> bool:
    return reply == b"OK"


def _pair(reply: Any) -> tuple[bytes, bytes] | None:
    return None if reply is None else (reply[0], reply[1])


def _float(reply: Any) -> float | None:
    return None if reply is None else float(reply)


class _Commands:
    """The commands, written once for the client (sent at once) and the pipeline (queued)."""

    def _command(self, args: Sequence[Any], parse: Parse | None = None) -> Any:
        raise NotImplementedError

    def ping(self) -> Any:
        return self._command(("PING",))

    def get(self, name: str) -> Any:
        return self._command(("GET", name))

    def set(self, name: str, value: bytes | str | int, ex: int | None = None) -> Any:
        args: tuple[Any, ...] = ("SET", name, value)
        if ex is not None:
            args += ("EX", ex)
        return self._command(args, _ok)

    def delete(self, *names: str) -> Any:
        return self._command(("DEL", *names))

    def lpush(self, name: str, *values: bytes | str) -> Any:
        return self._command(("LPUSH", name, *values))

    def rpush(self, name: str, *values: bytes | str) -> Any:
        return self._command(("RPUSH", name, *values))

    def llen(self, name: str) -> Any:
        return self._command(("LLEN", name))

    def brpop(self, keys: Sequence[str], timeout: float = 0) -> Any:
        return self._command(("BRPOP", *keys, timeout), _pair)

    def hincrby(self, name: str, key: str, amount: int = 1) -> Any:
        return self._command(("HINCRBY", name, key, amount))

    def hset(self, name: str, key: str, value: bytes | str | int) -> Any:
        return self._command(("HSET", name, key, value))

    def zadd(self, name: str, mapping: Mapping[bytes | str, float]) -> Any:
        args: list[Any] = ["ZADD", name]
        for member, score in mapping.items():
            args += (score, member)
        return self._command(args)

    def zscore(self, name: str, member: bytes | str) -> Any:
        return self._command(("ZSCORE", name, member), _float)

    def zrevrange(self, name: str, start: int, end: int) -> Any:
        return self._command(("ZREVRANGE", name, start, end))


class LocalBus(_Commands):
    """A connection to the Redis at unix socket ``path`` (opened at the first command)."""

    def __init__(
        self, path: str, *, username: str | None = None, password: str | None = None
    ) -> None:
        self._path = path
        self._auth: tuple[Any, ...] = ()
        if password is not None:
            self._auth = ("AUTH", password) if username is None else ("AUTH", username, password)
        self._sock: socket.socket | None = None
        self._reader: Any = None
        self._pid = 0

    def pipeline(self, transaction: bool = False) -> Pipeline:
        """Commands queued and sent in one write by :meth:`Pipeline.execute` (never a
        MULTI/EXEC transaction: ``transaction`` must be False, as SAND always asks)."""
        if transaction:
            raise ValueError("LocalBus pipelines are not transactions")
        return Pipeline(self)

    def register_script(self, source: str) -> Script:
        return Script(self, source)

    def scan_iter(self, match: str, count: int = 100) -> Iterator[bytes]:
        """Every key matching ``match``, a SCAN page (about ``count`` keys) at a time."""
        cursor = b"0"
        while True:
            cursor, names = self._command(("SCAN", cursor, "MATCH", match, "COUNT", count))
            yield from names
            if cursor == b"0":
                return

    def send(self, *args: Any) -> int:
        """Send one command without waiting for its reply; returns the connection's file
        descriptor, readable once the reply is there (:meth:`receive` it then, before any
        other command on this client)."""
        sock = self._connection()
        try:
            sock.sendall(hiredis.pack_command(args))
        except OSError as exc:
            self.close()
            raise BusUnreachable(f"redis at {self._path}: {exc}") from exc
        return sock.fileno()

    def receive(self) -> Any:
        """The reply of the command :meth:`send` sent (blocks until it is whole)."""
        if self._sock is None or self._pid != os.getpid():
            raise BusUnreachable(f"redis at {self._path}: no command was sent on this client")
        try:
            (reply,) = self._read(self._sock, 1)
        except OSError as exc:
            self.close()
            raise BusUnreachable(f"redis at {self._path}: {exc}") from exc
        except BusUnreachable:
            self.close()
            raise
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def close_inherited(self) -> None:
        """In a forked child: close the parent's connection this client holds (the
        parent's stays open), so that nothing in the child can use it."""
        if self._sock is not None and self._pid != os.getpid():
            self._sock.close()
            self._sock = None

    def close(self) -> None:
        """Closes this process's connection (a parent's is left alone in a child)."""
        if self._sock is not None and self._pid == os.getpid():
            self._sock.close()
        self._sock = None

    def _command(self, args: Sequence[Any], parse: Parse | None = None) -> Any:
        (reply,) = self.run([(args, parse)])
        return reply

    def run(self, commands: Sequence[tuple[Sequence[Any], Parse | None]]) -> list[Any]:
        """Sends ``commands`` in one write and returns their parsed replies in order; raises
        the first error reply (after reading them all) or :class:`BusUnreachable`."""
        payload = b"".join(hiredis.pack_command(tuple(args)) for args, _ in commands)
        replies = self._roundtrip(payload, len(commands))
        for reply in replies:
            if isinstance(reply, ReplyError):
                raise reply
        return [
            reply if parse is None else parse(reply)
            for reply, (_, parse) in zip(replies, commands, strict=True)
        ]

    def _roundtrip(self, payload: bytes, count: int) -> list[Any]:
        sock = self._connection()
        try:
            sock.sendall(payload)
            return self._read(sock, count)
        except OSError as exc:
            self.close()
            raise BusUnreachable(f"redis at {self._path}: {exc}") from exc
        except BusUnreachable:  # the reader found bytes that are not RESP
            self.close()
            raise

    def _read(self, sock: socket.socket, count: int) -> list[Any]:
        replies: list[Any] = []
        reader = self._reader
        while len(replies) < count:
            reply = reader.gets()
            if reply is _NO_REPLY:
                data = sock.recv(_READ_BYTES)
                if not data:
                    raise ConnectionResetError("the server closed the connection")
                reader.feed(data)
                continue
            replies.append(reply)
        return replies

    def _connection(self) -> socket.socket:
        if self._sock is not None and self._pid == os.getpid():
            return self._sock
        # none yet, or the parent's (inherited through a fork): this process opens its own
        self._sock = None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self._path)
        except OSError as exc:
            sock.close()
            raise BusUnreachable(f"redis at {self._path}: {exc}") from exc
        self._sock, self._pid = sock, os.getpid()
        self._reader = hiredis.Reader(replyError=ReplyError, protocolError=BusUnreachable)
        if self._auth:
            (reply,) = self._roundtrip(hiredis.pack_command(self._auth), 1)
            if isinstance(reply, ReplyError):
                self.close()
                raise reply
        return sock


class Pipeline(_Commands):
    """Commands queued on a :class:`LocalBus`; :meth:`execute` sends them in one write."""

    def __init__(self, bus: LocalBus) -> None:
        self._bus = bus
        self._queued: list[tuple[Sequence[Any], Parse | None]] = []

    def _command(self, args: Sequence[Any], parse: Parse | None = None) -> Pipeline:
        self._queued.append((args, parse))
        return self

    def execute(self) -> list[Any]:
        queued, self._queued = self._queued, []
        return self._bus.run(queued) if queued else []


class Script:
    """A Lua script run by its SHA1 (``EVALSHA``), loaded into Redis on first ``NOSCRIPT``."""

    def __init__(self, bus: LocalBus, source: str) -> None:
        self._bus = bus
        self._source = source
        self._sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    def __call__(self, keys: Iterable[str] = (), args: Iterable[Any] = ()) -> Any:
        keys, args = list(keys), list(args)
        try:
            (reply,) = self._bus.run([(("EVALSHA", self._sha, len(keys), *keys, *args), None)])
        except ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
            # EVAL runs it and caches it: the next EVALSHA finds it
            (reply,) = self._bus.run([(("EVAL", self._source, len(keys), *keys, *args), None)])
        return reply

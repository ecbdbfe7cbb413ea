"""A private redis-server on a unix socket, for unit tests of code that speaks to Redis
(skipped when the binary is absent)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sand.localbus import LocalBus


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[redis.Redis]:
    """A client of a redis-server of its own, listening on ``directory/redis.sock`` only
    (no port, no persistence), stopped when the block ends."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    sock = directory / "redis.sock"
    server = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(unix_socket_path=str(sock))
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        yield client
    finally:
        server.kill()
        server.wait()


def bus_of(client: redis.Redis) -> LocalBus:
    """The grain worker's own client (:class:`~sand.localbus.LocalBus`) of the server that
    ``client`` (from :func:`private_redis`) talks to: what worker code gets in production."""
    return LocalBus(str(client.connection_pool.connection_kwargs["path"]))

"""Data-layer backends: the emulator's store shared across forks, and the Redis store."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest
from sand import keys
from sand.data import DataStore, DataStoreError
from sand.data.memory import DictDataStore, MemoryDataServer
from sand.data.redis import RedisDataStore

from tests.unit.redis_server import bus_of, private_redis


@pytest.mark.timeout(20)
def test_memoryStore_isSharedAcrossForks() -> None:
    """Values written by forked children are seen by the parent and by later children."""
    with MemoryDataServer() as server:
        store = server.store("app", "local")
        store.put("from-parent", b"p")  # the parent's connection exists before the forks
        pids = []
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    assert store.get("from-parent") == b"p"
                    store.put(f"child/{i}", str(i).encode())
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        statuses = [os.waitpid(pid, 0)[1] for pid in pids]
        assert statuses == [0, 0, 0, 0]
        assert store.keys("child/") == ["child/0", "child/1", "child/2", "child/3"]
        assert server.snapshot("app", "local")["child/3"] == b"3"


@pytest.mark.timeout(10)
def test_memoryStore_namespacesAreSeparate() -> None:
    """Apps and scopes do not see each other's keys."""
    with MemoryDataServer() as server:
        server.store("a", "local").put("k", b"1")
        assert server.store("a", "global").get("k") is None
        assert server.store("b", "local").get("k") is None
        assert server.store("a", "local").delete("k") is True


@pytest.mark.timeout(10)
def test_memoryStore_serverGone_raisesDataStoreError() -> None:
    """After the server closes, a client gets a DataStoreError naming the operation."""
    server = MemoryDataServer()
    server.start()
    store = server.store("a", "local")
    server.close()
    with pytest.raises(DataStoreError, match="get 'k' failed"):
        store.get("k")


def test_backends_implementTheProtocol() -> None:
    """Every backend is a DataStore."""
    assert isinstance(DictDataStore(), DataStore)
    assert isinstance(RedisDataStore(FakeRedis(), "app"), DataStore)
    with MemoryDataServer() as server:
        assert isinstance(server.store("a", "local"), DataStore)


class FakeRedis:
    """The four redis-py calls RedisDataStore makes, over a dict."""

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.values.get(key)

    def set(self, key: str, value: bytes) -> bool:
        self.values[key] = value
        return True

    def delete(self, key: str) -> int:
        return 1 if self.values.pop(key, None) is not None else 0

    def scan_iter(self, match: str, count: int) -> list[bytes]:
        # Redis glob: a backslash escapes the next character; fnmatch uses [x] for that.
        pattern = ""
        chars = iter(match)
        for ch in chars:
            pattern += f"[{next(chars)}]" if ch == "\\" else ch
        return [k.encode() for k in self.values if fnmatch.fnmatchcase(k, pattern)]


def test_redisStore_usesKeysModuleLayout() -> None:
    """Values live under sand:data:<app>:<scope>:<key>."""
    redis = FakeRedis()
    store = RedisDataStore(redis, "thumbs")
    store.put("img:1", b"x")
    RedisDataStore(redis, "thumbs", "global").put("img:1", b"y")
    assert redis.values == {
        "sand:data:thumbs:local:img:1": b"x",
        "sand:data:thumbs:global:img:1": b"y",
    }
    assert keys.data_key("thumbs", "local", "img:1") == "sand:data:thumbs:local:img:1"


def test_redisStore_keysEscapesGlobCharacters() -> None:
    """A prefix with * or [ lists only keys that really start with it."""
    store = RedisDataStore(FakeRedis(), "app")
    for key in ("a*1", "a*2", "ab", "[x]"):
        store.put(key, b"v")
    assert store.keys("a*") == ["a*1", "a*2"]
    assert store.keys("[") == ["[x]"]
    assert store.keys() == ["[x]", "a*1", "a*2", "ab"]
    assert store.get("ab") == b"v"
    assert store.delete("ab") is True
    assert store.get("ab") is None


def test_redisStore_translatesRedisErrors() -> None:
    """A Redis failure becomes a DataStoreError naming app, scope, operation and key."""
    from sand.localbus import BusUnreachable

    class Broken(FakeRedis):
        def get(self, key: str) -> bytes | None:
            raise BusUnreachable("connection refused")

    with pytest.raises(DataStoreError, match=r"local, app 'app'\): get 'k' failed: connection"):
        RedisDataStore(Broken(), "app").get("k")


@pytest.mark.timeout(20)
def test_redisStore_againstRealRedis(tmp_path: Path) -> None:
    """Against a real redis-server on a unix socket (skipped when the binary is absent)."""
    with private_redis(tmp_path) as client:
        store = RedisDataStore(bus_of(client), "app")
        store.put("x/1", b"one")
        store.put("x/2", b"two")
        store.put("y", b"three")
        assert store.keys("x/") == ["x/1", "x/2"]
        assert store.get("x/2") == b"two"
        assert client.get("sand:data:app:local:y") == b"three"

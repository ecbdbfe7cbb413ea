"""The global data store of the cluster (``AgentDataStore``) against a real redis-server and
a twin of the host agent's request loop; the metadata an instance records for recovery;
the global value limit, the same in the emulator and on the cluster."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sand import keys
from sand.data import MAX_GLOBAL_VALUE_BYTES, DataStoreError
from sand.data.agent import AgentDataStore
from sand.data.memory import DictDataStore
from sand.data.written import DataWrite, RecordingDataStore, header_value
from sand.grain.context import Data
from sand_contracts.ttypes import DataOp, DataReply, DataRequest
from thrift.protocol import TCompactProtocol
from thrift.TSerialization import deserialize, serialize

from tests.unit.redis_server import bus_of, private_redis

PROTOCOL = TCompactProtocol.TCompactProtocolFactory()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[redis.Redis]:
    """A private redis-server on a unix socket (skipped when the binary is absent)."""
    with private_redis(tmp_path) as conn:
        yield conn


class AgentTwin:
    """The host agent's side of the protocol over a dict: takes requests from the apps'
    lists, keeps each app's values apart by the list the request came from, replies."""

    def __init__(self, conn: redis.Redis, apps: list[str], fail: str | None = None) -> None:
        self._conn = conn
        self._queues = {keys.data_requests_key(app): app for app in apps}
        self.values: dict[str, dict[str, bytes]] = {app: {} for app in apps}
        self.seen: list[tuple[str, DataRequest]] = []
        self._fail = fail
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> AgentTwin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.is_set():
            taken = self._conn.brpop(list(self._queues), timeout=0.1)
            if taken is None:
                continue
            app = self._queues[taken[0].decode()]
            request: DataRequest = deserialize(DataRequest(), taken[1], PROTOCOL)
            self.seen.append((app, request))
            reply = self._apply(self.values[app], request)
            reply_key = keys.data_reply_key(app, request.request_id)
            self._conn.lpush(reply_key, serialize(reply, PROTOCOL))

    def _apply(self, values: dict[str, bytes], request: DataRequest) -> DataReply:
        if self._fail is not None:
            return DataReply(ok=False, error=self._fail)
        if request.op == DataOp.GET:
            return DataReply(ok=True, value=values.get(request.key))
        if request.op == DataOp.PUT:
            values[request.key] = request.value
            return DataReply(ok=True)
        if request.op == DataOp.DELETE:
            return DataReply(ok=True, existed=values.pop(request.key, None) is not None)
        found = sorted(k for k in values if k.startswith(request.key))
        return DataReply(ok=True, keys=found)


@pytest.mark.timeout(20)
def test_agentStore_roundTripsThroughTheAgentOnTheAppsOwnKeys(client: redis.Redis) -> None:
    """put/get/keys/delete reach the agent on the app's request list; replies come back."""
    with AgentTwin(client, ["thumbs", "other"]) as agent:
        store = AgentDataStore(bus_of(client), "thumbs", timeout_s=5)
        store.put("img/1", b"one")
        store.put("img/2", b"two")
        store.put("txt", b"three")
        assert store.get("img/2") == b"two"
        assert store.get("absent") is None
        assert store.keys("img/") == ["img/1", "img/2"]
        assert store.keys() == ["img/1", "img/2", "txt"]
        assert store.delete("img/1") is True
        assert store.delete("img/1") is False
        assert agent.values == {"thumbs": {"img/2": b"two", "txt": b"three"}, "other": {}}
        assert {app for app, _ in agent.seen} == {"thumbs"}
        # every request carries a deadline about timeout_s ahead
        _, first = agent.seen[0]
        assert 0 < first.deadline_ms - time.time() * 1000 <= 5000
    # replies are taken, not left behind
    assert client.keys("sand:gdata:thumbs:reply:*") == []


@pytest.mark.timeout(20)
def test_agentStore_agentRefuses_raisesDataStoreErrorNamingOpKeyAndCause(
    client: redis.Redis,
) -> None:
    """An error reply (Cassandra failed, say) reaches the grain as DataStoreError."""
    with AgentTwin(client, ["thumbs"], fail="cassandra: Query timed out after PT5S"):
        store = AgentDataStore(bus_of(client), "thumbs", timeout_s=5)
        with pytest.raises(DataStoreError) as caught:
            store.put("img/1", b"x")
    message = str(caught.value)
    assert "global, app 'thumbs'" in message
    assert "put 'img/1'" in message
    assert "Query timed out" in message


@pytest.mark.timeout(20)
def test_agentStore_noAgent_timesOutWithAClearError(client: redis.Redis) -> None:
    """Without an agent the call gives up after its timeout, saying so."""
    store = AgentDataStore(bus_of(client), "thumbs", timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(DataStoreError, match=r"get 'k' failed: no reply from the host agent"):
        store.get("k")
    assert time.monotonic() - started < 3


@pytest.mark.timeout(20)
def test_agentStore_valueOverTheLimit_refusedBeforeAnythingIsSent(client: redis.Redis) -> None:
    """A value over 1 MiB is refused in the grain, with the limit named; nothing is queued."""
    store = AgentDataStore(bus_of(client), "thumbs", timeout_s=0.3)
    with pytest.raises(ValueError, match=f"at most {MAX_GLOBAL_VALUE_BYTES} bytes"):
        store.put("big", b"x" * (MAX_GLOBAL_VALUE_BYTES + 1))
    assert client.llen(keys.data_requests_key("thumbs")) == 0


def test_dataPut_globalLimitAppliesToEveryBackend_localHasNone() -> None:
    """context.data refuses a global value over the limit whatever the backend (the emulator's
    too), and stores it nothing; the local scope keeps no such limit."""
    stores = {"local": DictDataStore(), "global": DictDataStore()}
    data = Data(stores)  # type: ignore[arg-type]
    big = b"x" * MAX_GLOBAL_VALUE_BYTES  # + 1 tag byte once encoded
    with pytest.raises(ValueError, match="global data layer holds at most"):
        data.put("big", big, scope="global")
    assert stores["global"].keys() == []
    data.put("big", big)
    data.put("fits", b"x" * (MAX_GLOBAL_VALUE_BYTES - 1), scope="global")
    assert data.keys(scope="global") == ["fits"]


def test_recordingStore_notesTheLastWritePerKey_andTakeClears() -> None:
    """Puts note size and SHA-256 of the stored bytes, deletes note the key; the last write
    of a key wins; take() hands them over once."""
    store = RecordingDataStore(DictDataStore())
    store.put("a", b"first")
    store.put("b", b"bee")
    store.put("a", b"second")
    store.delete("b")
    assert store.get("a") == b"second" and store.keys() == ["a"]
    writes = store.take()
    assert writes == [
        DataWrite("a", 6, hashlib.sha256(b"second").hexdigest()),
        DataWrite("b", None, None),
    ]
    assert store.take() == []
    assert json.loads(header_value(writes)) == [
        {"key": "a", "size": 6, "sha256": hashlib.sha256(b"second").hexdigest()},
        {"key": "b", "deleted": True},
    ]


def test_recordingStore_failedWrite_notesNothing() -> None:
    """A write whose outcome is unknown (the backend raised) is not claimed."""

    class Failing(DictDataStore):
        def put(self, key: str, value: bytes) -> None:
            raise DataStoreError("down")

    store = RecordingDataStore(Failing())
    with pytest.raises(DataStoreError):
        store.put("a", b"x")
    assert store.take() == []

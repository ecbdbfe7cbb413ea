"""The global data layer on the real stack (decision 0012): values a grain puts with
scope="global" live in Cassandra, reached through the host agent; other grains and later
executions read them, keys(prefix) and delete work, the value limit holds in the SDK and in
the agent, another app can neither read them nor speak for their app, they outlive an
agent restart, and the instance's FINISHED flag carries their metadata to Kafka."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sand.client import SandApiError, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = pytest.mark.integration

APP_DIR = Path(__file__).resolve().parent / "apps" / "gdata"
LIMIT = 1048576


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@contextlib.contextmanager
def deployed(client: SandClient, app_dir: Path, backend: str) -> Iterator[str]:
    app = client.deploy(app_dir, backend=backend)
    try:
        yield app["name"]
    finally:
        with contextlib.suppress(SandApiError):
            client.undeploy(app["name"])


def renamed(tmp_path: Path, name: str) -> Path:
    """The gdata app under another name (another application, same code)."""
    copy = tmp_path / name
    shutil.copytree(APP_DIR, copy)
    manifest = copy / "app.yaml"
    manifest.write_text(manifest.read_text().replace("name: gdata", f"name: {name}"))
    return copy


def run(client: SandClient, app: str, *ops: list[Any], workflow: str = "main") -> list[Any]:
    execution = client.invoke(app, {"ops": [list(op) for op in ops]}, workflow=workflow)
    assert execution.status == "SUCCEEDED", execution.cause
    return [r.get("ok", r) for r in execution.output["results"]]


def cassandra_rows(config: ClusterConfig, app: str) -> dict[str, Any]:
    """The app's rows of sand.data, read straight from Cassandra."""
    from cassandra.cluster import Cluster

    cluster = Cluster(["127.0.0.1"], port=config.ports.cassandra_cql)
    try:
        session = cluster.connect("sand")
        rows = session.execute(
            "SELECT key, value, size, sha256, written_at FROM data WHERE app = %s", (app,)
        )
        return {row.key: row for row in rows}
    finally:
        cluster.shutdown()


def finished_data_headers(config: ClusterConfig, topic: str, execution_id: str) -> list[Any]:
    """The sand-data headers of the FINISHED flags of ``execution_id`` on ``topic``."""
    from confluent_kafka import Consumer, TopicPartition
    from sand_bus.ttypes import EventFlag
    from sand_worker.bus import decode

    consumer = Consumer(
        {
            "bootstrap.servers": config.kafka_bootstrap,
            "group.id": f"test-gdata-{execution_id}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    found: list[Any] = []
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not found:
            message = consumer.poll(0.5)
            if message is None or message.error() or message.key() != execution_id.encode():
                continue
            if decode(message.value()).flag == EventFlag.FINISHED:
                headers = dict(message.headers() or [])
                found.append(
                    json.loads(headers["sand-data"] or b"null") if "sand-data" in headers else None
                )
    finally:
        consumer.close()
    return found


@pytest.mark.timeout(240)
def test_globalData_writtenByOneGrain_readByAnotherAndByLaterExecutions_inCassandra(
    client: SandClient, cluster_config: ClusterConfig
) -> None:
    """A put in one grain is read by the next grain of the execution and by a later
    execution; it is in Cassandra (with size and hash), not in the host's Redis; the
    writer's FINISHED flag on Kafka carries the same size and hash."""
    with deployed(client, APP_DIR, "docker") as app:
        first = client.invoke(
            app,
            {"ops": [["put", "greeting", {"hello": "world"}]], "read": "greeting", "sleep_s": 0.3},
            workflow="chain",
        )
        assert first.status == "SUCCEEDED", first.cause
        assert first.output["value"] == {"hello": "world"}
        assert run(client, app, ["get", "greeting"]) == [{"hello": "world"}]

        stored = b'J{"hello":"world"}'
        row = cassandra_rows(cluster_config, app)["greeting"]
        assert bytes(row.value) == stored
        assert row.size == len(stored)
        assert bytes(row.sha256) == hashlib.sha256(stored).digest()
        assert row.written_at is not None
        local = redis.Redis(
            unix_socket_path=str(cluster_config.redis_socket),
            password=cluster_config.redis_password,
        )
        assert local.keys(f"sand:data:{app}:global:*") == []

        headers = finished_data_headers(cluster_config, f"sand.{app}.data", first.execution_id)
        assert headers == [
            [{"key": "greeting", "size": len(stored), "sha256": hashlib.sha256(stored).hexdigest()}]
        ]


@pytest.mark.timeout(240)
def test_globalData_keysByPrefix_delete_andTheValueLimit(client: SandClient) -> None:
    """keys(prefix) lists the app's keys in order, delete says whether the key was there, and
    a value over 1 MiB is refused with the limit named, by the SDK and by the agent alike.
    (Global data outlives an undeploy: each run uses keys of its own.)"""
    run_id = uuid.uuid4().hex[:8]
    with deployed(client, APP_DIR, "process") as app:
        results = run(
            client,
            app,
            ["put", f"{run_id}/p/2", 2],
            ["put", f"{run_id}/p/1", 1],
            ["put", f"{run_id}/q/1", 3],
            ["keys", f"{run_id}/p/"],
            ["delete", f"{run_id}/p/1"],
            ["delete", f"{run_id}/p/1"],
            ["keys", f"{run_id}/p/"],
            ["get", f"{run_id}/p/1"],
            ["keys", f"{run_id}/"],
        )
        results = [
            [k.removeprefix(f"{run_id}/") for k in r] if isinstance(r, list) else r for r in results
        ]
        assert results == [
            None,
            None,
            None,
            ["p/1", "p/2"],
            True,
            False,
            ["p/2"],
            None,
            ["p/2", "q/1"],
        ]
        sdk, agent, after = run(
            client,
            app,
            ["put_big", "big", LIMIT],  # + the encoding's tag byte: one over
            ["raw_put_big", "big", LIMIT + 1],
            ["get", "big"],
        )
        assert sdk["error"] == "ValueError"
        assert f"at most {LIMIT} bytes" in sdk["message"]
        assert agent["error"] == "DataStoreError"
        assert "put 'big' failed" in agent["message"]
        assert f"over the global data layer's limit of {LIMIT} bytes" in agent["message"]
        assert after is None


@pytest.mark.timeout(240)
def test_globalData_isolation_anotherAppCannotReadNorSpeakForTheApp(
    client: SandClient, cluster_config: ClusterConfig, tmp_path: Path
) -> None:
    """App B sees none of app A's global data under the same key, and its Redis login can
    neither push a request onto A's list nor read A's requests or replies."""
    secret = f"secret/{uuid.uuid4().hex[:8]}"  # global data outlives an undeploy
    with (
        deployed(client, APP_DIR, "process") as app_a,
        deployed(client, renamed(tmp_path, "gdata-b"), "docker") as app_b,
    ):
        assert run(client, app_a, ["put", secret, "A's"]) == [None]
        read, injected, own = run(
            client, app_b, ["get", secret], ["inject", app_a], ["put", secret, "B's"]
        )
        assert read is None
        assert injected == dict.fromkeys(injected, "denied")
        assert own is None
        assert run(client, app_a, ["get", secret]) == ["A's"]
        assert run(client, app_b, ["get", secret]) == ["B's"]
        assert "stolen" not in cassandra_rows(cluster_config, app_a)


def wait_invocable(client: SandClient, app: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if client.invoke(app, {"ops": []}).status == "SUCCEEDED":
                return
        except SandApiError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"app {app} did not come back within {timeout_s} s")
        time.sleep(1)


@pytest.mark.timeout(300)
def test_globalData_survivesAnAgentRestart(client: SandClient, cluster: Supervisor) -> None:
    """The data is in Cassandra: after the host agent restarts (and brings the app back from
    its record), the value is still there."""
    with deployed(client, APP_DIR, "process") as app:
        assert run(client, app, ["put", "durable", [1, 2, 3]]) == [None]
        cluster._stop_names(["host-agent"])
        cluster.up()
        wait_invocable(client, app)
        assert run(client, app, ["get", "durable"]) == [[1, 2, 3]]


def _figures(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
    }


@pytest.mark.timeout(300)
def test_globalData_cost_globalVsLocal_fromAGrain(client: SandClient) -> None:
    """Prints (does not assert) the latency of global vs local put and get from a grain,
    same run: 300 of each, after 20 of warm-up."""
    with deployed(client, APP_DIR, "process") as app:
        run(client, app, ["bench", 20])
        (times,) = run(client, app, ["bench", 300])
    report = {op: _figures(samples) for op, samples in times.items()}
    print("\nglobal data cost (ms, from a grain):", json.dumps(report))
    out = Path(__file__).resolve().parents[2] / "build" / "gdata-cost.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    assert all(figures["p50_ms"] > 0 for figures in report.values())

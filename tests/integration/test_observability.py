"""Metrics and traces on the real stack (decision 0019): the frontends' and the host
agent's ``/metrics`` move by exactly what was invoked, a grain worker's counters reach
the agent, scrapes without credentials are refused, and a caller's W3C traceparent
comes back as OTLP spans (one per grain run, linked parent to child) at a collector."""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor
from sand.contracts import HEADER_INTERNAL as INTERNAL_HEADER

from tests.integration.conftest import OTLP_PORT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
TEST_APPS = Path(__file__).resolve().parent / "apps"
APP = "obs-faults"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text exposition: (name, labels, value)."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match is not None, f"not a sample line: {line!r}"
        labels = dict(_LABEL.findall(match.group(3) or ""))
        found.append((match.group(1), labels, float(match.group(4))))
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples named ``name`` whose labels include ``labels``."""
    return sum(
        v
        for n, ls, v in samples(text)
        if n == name and all(ls.get(k) == x for k, x in labels.items())
    )


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def app(client: SandClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The faults test app under a name of its own (so its counters move only here)."""
    copy = tmp_path_factory.mktemp("apps") / APP
    shutil.copytree(TEST_APPS / "faults", copy)
    manifest = copy / "app.yaml"
    manifest.write_text(manifest.read_text().replace("name: faults", f"name: {APP}"))
    client.deploy(copy)
    yield APP
    client.undeploy(APP)


@pytest.fixture(scope="module")
def hello(client: SandClient) -> Iterator[str]:
    client.deploy(ROOT / "examples" / "hello")
    yield "hello"
    client.undeploy("hello")


def frontends(config: ClusterConfig) -> str:
    """Every frontend's /metrics, scraped on its own port with the agents' secret (what a
    Prometheus next to them does), concatenated: invocations spread over them."""
    texts = []
    for port in config.ports.frontends:
        answer = requests.get(
            f"http://127.0.0.1:{port}/metrics",
            headers={INTERNAL_HEADER: config.internal_secret},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        texts.append(answer.text)
    return "\n".join(texts)


def agent(config: ClusterConfig) -> str:
    url = config.host_plans[0].agent_url(config.ports.host_agent)
    answer = requests.get(
        f"{url}/metrics", headers={INTERNAL_HEADER: config.internal_secret}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return answer.text


def eventually(read: Callable[[], float], expected: float, timeout_s: float = 20) -> float:
    """``read()`` once it equals ``expected`` (counters reach the agent asynchronously);
    its last value when the time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = read()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_invocations_move_frontend_and_agent_counters(
    client: SandClient, cluster_config: ClusterConfig, app: str
) -> None:
    """3 sync + 1 async successful invocations and 1 that fails with KeyError move the
    frontends' invocation counters and latency histogram, the agent's ended executions and
    the worker's own counters (taken, runs, failures by error type) by exactly that."""
    before_fe = frontends(cluster_config)
    before_agent = agent(cluster_config)

    for _ in range(3):
        assert client.invoke(app, {"how": "ok"}).status == "SUCCEEDED"
    async_id = client.invoke(app, {"how": "ok"}, wait=False).execution_id
    failed = client.invoke(app, {"how": "raise", "what": "x"})
    assert failed.status == "FAILED" and failed.error == "KeyError"
    deadline = time.monotonic() + 60
    while client.result(async_id).status == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)

    after_fe = frontends(cluster_config)

    def moved_fe(name: str, **labels: str) -> float:
        return value(after_fe, name, **labels) - value(before_fe, name, **labels)

    assert moved_fe("sand_invocations_total", app=app, mode="sync") == 4
    assert moved_fe("sand_invocations_total", app=app, mode="async") == 1
    assert moved_fe("sand_invocation_duration_seconds_count", app=app, mode="sync") == 4
    assert moved_fe("sand_invocation_duration_seconds_sum", app=app, mode="sync") > 0
    assert moved_fe("sand_http_responses_total", status="202") >= 1

    def moved_agent(name: str, **labels: str) -> Callable[[], float]:
        return lambda: value(agent(cluster_config), name, **labels) - value(
            before_agent, name, **labels
        )

    ended = "sand_executions_ended_total"
    assert eventually(moved_agent(ended, app=app, status="SUCCEEDED"), 4) == 4
    assert eventually(moved_agent(ended, app=app, status="FAILED", error="KeyError"), 1) == 1
    grain = {"app": app, "grain": "crash"}
    assert eventually(moved_agent("sand_grain_events_taken_total", **grain), 5) == 5
    assert eventually(moved_agent("sand_grain_run_duration_seconds_count", **grain), 5) == 5
    assert eventually(moved_agent("sand_grain_failures_total", error="KeyError", **grain), 1) == 1
    text = agent(cluster_config)
    assert value(text, "sand_grain_worker_ready", **grain) == 1
    assert value(text, "sand_agent_sandboxes", app=app) == 1
    assert any(n == "sand_grain_queue_depth" and ls == grain for n, ls, _ in samples(text))
    # the lag is asked of the broker at most every 10 s, once the groups have committed
    lag = eventually(
        lambda: float(
            any(
                n == "sand_agent_kafka_consumer_lag" and ls.get("group") == "sand-records"
                for n, ls, _ in samples(agent(cluster_config))
            )
        ),
        1,
        timeout_s=30,
    )
    assert lag == 1, "no sand_agent_kafka_consumer_lag{group=sand-records} on the agent"


def test_timeout_is_counted(client: SandClient, cluster_config: ClusterConfig, app: str) -> None:
    """A grain run stopped at its deadline (timeout_s: 2) is counted as a timeout and a
    States.Timeout failure, and shows on the agent."""
    grain = {"app": app, "grain": "crash"}
    before = agent(cluster_config)
    result = client.invoke(app, {"how": "sleep", "seconds": 30})
    assert result.status == "FAILED" and result.error == "States.Timeout"

    def moved(name: str, **labels: str) -> float:
        return value(agent(cluster_config), name, **labels) - value(before, name, **labels)

    assert eventually(lambda: moved("sand_grain_timeouts_total", **grain), 1) == 1
    assert (
        eventually(lambda: moved("sand_grain_failures_total", error="States.Timeout", **grain), 1)
        == 1
    )


def test_stop_is_counted_by_the_frontend(
    client: SandClient, cluster_config: ClusterConfig, app: str
) -> None:
    """A stopped execution ends ABORTED on the frontend, not through a host agent: the
    frontend counts the stop by its status."""
    before = frontends(cluster_config)
    execution_id = client.invoke(app, {"how": "sleep", "seconds": 1.5}, wait=False).execution_id
    assert client.stop(execution_id).status == "ABORTED"
    after = frontends(cluster_config)
    labels = {"action": "stop", "status": "200"}
    assert (
        value(after, "sand_execution_controls_total", **labels)
        - value(before, "sand_execution_controls_total", **labels)
        == 1
    )


def test_scrapes_without_credentials_are_refused(
    client: SandClient, cluster_config: ClusterConfig
) -> None:
    """A frontend's /metrics needs the agents' secret or an admin's token (through nginx
    too), an agent's the secret; refused scrapes are counted as auth failures."""
    before = frontends(cluster_config)
    port = cluster_config.ports.frontends[0]
    assert requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).status_code == 401
    wrong = {INTERNAL_HEADER: "not-the-secret"}
    assert (
        requests.get(f"http://127.0.0.1:{port}/metrics", headers=wrong, timeout=10).status_code
        == 401
    )
    gateway = cluster_config.gateway_url
    assert requests.get(f"{gateway}/metrics", timeout=10).status_code == 401
    admin = {"Authorization": f"Bearer {admin_token(cluster_config)}"}
    through_nginx = requests.get(f"{gateway}/metrics", headers=admin, timeout=10)
    assert through_nginx.status_code == 200 and "sand_invocations" in through_nginx.text
    assert "# TYPE sand_http_responses_total counter" in client.metrics()
    url = cluster_config.host_plans[0].agent_url(cluster_config.ports.host_agent)
    assert requests.get(f"{url}/metrics", timeout=10).status_code == 401
    refused = value(frontends(cluster_config), "sand_auth_failures_total", reason="metrics")
    assert refused - value(before, "sand_auth_failures_total", reason="metrics") >= 3


class _Collector(ThreadingHTTPServer):
    """An OTLP/HTTP receiver: keeps every span of every ExportTraceServiceRequest."""

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Receive)
        self.spans: list[Any] = []
        self.lock = threading.Lock()


class _Receive(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.server.lock:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.server.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector(OTLP_PORT)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_traceparent_comes_back_as_linked_otlp_spans(
    client: SandClient, cluster_config: ClusterConfig, hello: str, collector: _Collector
) -> None:
    """hello's three grains run as three spans of the caller's trace: the first a child of
    the caller's span, each next one a child of the grain run that produced its event."""
    trace_id = os.urandom(16).hex()
    caller_span = os.urandom(8).hex()
    answer = requests.post(
        f"{cluster_config.gateway_url}/v1/apps/{hello}/invoke",
        json={"name": "ada"},
        headers={
            "Authorization": f"Bearer {admin_token(cluster_config)}",
            "traceparent": f"00-{trace_id}-{caller_span}-01",
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "SUCCEEDED"
    # tracing is on without ?trace=1: the answer carries the trace, with the caller's id
    assert body["trace"]["trace_id"] == trace_id

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with collector.lock:
            ours = [s for s in collector.spans if s.trace_id.hex() == trace_id]
        if len(ours) >= 3:
            break
        time.sleep(0.2)
    by_name = {s.name: s for s in ours}
    assert sorted(by_name) == ["greet", "normalize", "shout"], [s.name for s in ours]
    assert len(ours) == 3
    assert by_name["normalize"].parent_span_id.hex() == caller_span
    assert by_name["greet"].parent_span_id == by_name["normalize"].span_id
    assert by_name["shout"].parent_span_id == by_name["greet"].span_id
    for span in ours:
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0


def test_invalid_traceparent_is_ignored(
    client: SandClient, cluster_config: ClusterConfig, hello: str
) -> None:
    """An invalid traceparent (all-zero trace id) is ignored as the W3C spec says: the
    invocation runs untraced, no error."""
    answer = requests.post(
        f"{cluster_config.gateway_url}/v1/apps/{hello}/invoke",
        json={"name": "ada"},
        headers={
            "Authorization": f"Bearer {admin_token(cluster_config)}",
            "traceparent": f"00-{'0' * 32}-{os.urandom(8).hex()}-01",
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "SUCCEEDED"
    assert "trace" not in answer.json()


def test_hostile_worker_counters_never_break_the_scrape(
    cluster_config: ClusterConfig, app: str
) -> None:
    """Whatever a tenant writes to its grain's counter hash, the agent's scrape answers:
    garbage fields are ignored, odd error types become Other, and a hash too large to read
    is skipped and counted as a scrape error."""
    client = redis.Redis(
        unix_socket_path=str(cluster_config.redis_socket), password=cluster_config.redis_password
    )
    key = f"sand:metrics:{app}:crash"
    grain = {"app": app, "grain": "crash"}
    before = agent(cluster_config)
    garbage = {'failed:a"b}\n': "7", "taken": "NaN", "run_le:0.3": "9", "x" * 200: "1"}
    client.hset(key, mapping=garbage)
    try:
        text = agent(cluster_config)
        assert (
            value(text, "sand_grain_failures_total", error="Other", **grain)
            - value(before, "sand_grain_failures_total", error="Other", **grain)
            == 7
        )
        assert value(text, "sand_grain_events_taken_total", **grain) == 0  # "NaN" ignored
        client.hset(key, "huge", "1" * 100_000)
        text = agent(cluster_config)
        assert not any(
            n.startswith("sand_grain_events_taken") and ls == grain for n, ls, _ in samples(text)
        )
        skipped = value(text, "sand_agent_scrape_errors_total", source="worker_counters")
        assert (
            skipped - value(before, "sand_agent_scrape_errors_total", source="worker_counters") >= 1
        )
    finally:
        client.hdel(key, "huge", *garbage)

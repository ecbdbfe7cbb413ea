"""Nothing a client sends takes the gateway from other users (issue 22, decision 0024).

Bursts of every kind of refusal, with bodies up to nginx's limit, go through nginx to the
frontends: each must reach its client as its own status (never a 502), no frontend may be
marked down, and another user's ordinary calls right after (and during) must all succeed.
Slow clients must be cut off by nginx without holding a frontend thread."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from sand.client import SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.tenants import Tenant, make_tenant, renamed_app

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BURST = 32  # parallel requests of one kind
ROUNDS = 5  # the issue asks for five bursts of each kind in a row
# the suite's Cassandra keeps apps and their owners between runs: a fresh name each time
APP = f"gw-small-{secrets.token_hex(3)}"
OPEN_APP = f"gw-open-{secrets.token_hex(3)}"
APP_PAYLOAD_KB = 4


@dataclass(frozen=True)
class Refusal:
    """One kind of request the gateway must refuse with ``status``."""

    kind: str
    status: int
    path: str
    body: bytes
    token: str | None


@dataclass
class Tally:
    sent: int = 0
    right: int = 0
    bad_gateway: int = 0
    other: Counter[str] | None = None

    def add(self, expected: int, got: int | str) -> None:
        self.sent += 1
        if got == expected:
            self.right += 1
        elif got == 502:
            self.bad_gateway += 1
        else:
            self.other = self.other or Counter()
            self.other[str(got)] += 1


@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def tenant(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "gateway")


@pytest.fixture(scope="module")
def small_app(tenant: Tenant, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The tenant's copy of hello that accepts inputs of at most 4 KiB, and one (``OPEN_APP``)
    with the frontends' limit; the ordinary calls go to the first."""
    apps = tmp_path_factory.mktemp("apps")
    copy = renamed_app(ROOT / "examples" / "hello", APP, apps)
    manifest = copy / "app.yaml"
    manifest.write_text(manifest.read_text() + f"limits:\n  payload_kb: {APP_PAYLOAD_KB}\n")
    tenant.client.deploy(copy, backend="process")
    tenant.client.deploy(
        renamed_app(ROOT / "examples" / "hello", OPEN_APP, apps), backend="process"
    )
    yield APP
    tenant.client.undeploy(APP)
    tenant.client.undeploy(OPEN_APP)


def _post(url: str, body: bytes, token: str | None) -> int | str:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = requests.post(url, data=body, headers=headers, timeout=60)
    except requests.RequestException as exc:
        return type(exc).__name__
    # every answer, nginx's own included, is a JSON document with "error" when refused
    if response.status_code >= 400:
        assert "error" in response.json(), response.text
    return response.status_code


def _ordinary(client: SandClient, app: str, n: int) -> list[str]:
    """``n`` ordinary calls; the problems of those that did not succeed."""
    problems = []
    for i in range(n):
        try:
            out = client.invoke(app, {"name": f"Ada {i}"}).output
            if not isinstance(out, dict) or out.get("greeting") != f"Hello, Ada {i}!":
                problems.append(f"wrong output {out}")
        except Exception as exc:  # every failure is counted, not raised
            problems.append(repr(exc))
    return problems


@contextlib.contextmanager
def _nginx_errors(config: ClusterConfig) -> Iterator[Callable[[], list[str]]]:
    """The lines nginx logs from here on that mean a frontend was failed or marked down."""
    log = config.logs_dir / "nginx-error.log"
    start = log.stat().st_size if log.exists() else 0

    def new_lines() -> list[str]:
        with log.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        marks = ("temporarily disabled", "failed (32", "failed (104", "no live upstreams")
        return [line for line in text.splitlines() if any(m in line for m in marks)]

    yield new_lines


def _refusals(config: ClusterConfig, admin_token_: str, tenant: Tenant) -> list[Refusal]:
    invoke_limit = config.max_payload_kb * 1024
    near_limit = invoke_limit - 1024  # as large as nginx lets through to a frontend
    valid_big = json.dumps({"pad": "x" * (near_limit - 20)}).encode()
    assert len(valid_big) < invoke_limit
    invoke = f"/v1/apps/{APP}/invoke"
    return [
        Refusal("no token", 401, invoke, valid_big, None),
        Refusal("bad token", 401, invoke, valid_big, "sand_not-a-real-token"),
        Refusal("unknown app", 404, "/v1/apps/no-such-app-here/invoke", valid_big, admin_token_),
        Refusal("over the app's payload_kb", 413, invoke, valid_big, tenant.token),
        Refusal(
            "malformed JSON", 400, f"/v1/apps/{OPEN_APP}/invoke", b"{" * near_limit, tenant.token
        ),
        Refusal("over the gateway's limit", 413, invoke, b" " * (invoke_limit + 4096), None),
        Refusal("deploy upload without token", 401, "/v1/apps", b"\0" * 900_000, None),
    ]


@pytest.mark.timeout(600)
def test_refusalBursts_eachAnsweredWithItsOwnStatus_neverBadGateway_othersServed(
    cluster_config: ClusterConfig, admin: SandClient, tenant: Tenant, small_app: str
) -> None:
    """Five rounds of 32 parallel requests of each refusal kind: every one gets its own 4xx,
    none a 502; nginx marks no frontend down; the tenant's calls during and after all succeed."""
    assert _ordinary(tenant.client, small_app, 3) == []  # positive control before any burst
    kinds = _refusals(cluster_config, admin_token(cluster_config), tenant)
    tallies = {k.kind: Tally() for k in kinds}
    ordinary_problems: list[str] = []
    with _nginx_errors(cluster_config) as nginx_errors, ThreadPoolExecutor(BURST + 1) as pool:
        for _ in range(ROUNDS):
            for kind in kinds:
                url = cluster_config.gateway_url + kind.path
                during = pool.submit(_ordinary, tenant.client, small_app, 2)
                answers = list(
                    pool.map(_post, [url] * BURST, [kind.body] * BURST, [kind.token] * BURST)
                )
                for got in answers:
                    tallies[kind.kind].add(kind.status, got)
                ordinary_problems += during.result()
                ordinary_problems += _ordinary(tenant.client, small_app, 3)
        disabled = nginx_errors()
    print("\nkind | sent | right status | 502 | other")
    for kind in kinds:
        t = tallies[kind.kind]
        print(f"{kind.kind} ({kind.status}) | {t.sent} | {t.right} | {t.bad_gateway} | {t.other}")
    print(f"ordinary calls that failed: {len(ordinary_problems)}")
    for kind in kinds:
        t = tallies[kind.kind]
        assert t.right == t.sent == BURST * ROUNDS, (kind.kind, t)
    assert ordinary_problems == []
    assert disabled == [], "nginx failed or disabled a frontend:\n" + "\n".join(disabled[:5])


def _slow_socket(config: ClusterConfig, prefix: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", config.ports.nginx), timeout=30)
    sock.sendall(prefix)
    return sock


def _ending(sock: socket.socket) -> bytes:
    """What the server sends before it closes ``sock`` (b"" when it just closes it)."""
    chunks = []
    try:
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    return b"".join(chunks)


@pytest.mark.timeout(180)
def test_slowClients_holdNoFrontend_areCutOffAfterTheirTimeout(
    cluster_config: ClusterConfig, tenant: Tenant, small_app: str
) -> None:
    """More stalled bodies than both frontends have threads, and stalled headers: other calls are
    served while they stall, and nginx cuts each off within its timeout (10 s) plus slack."""
    request_line = f"POST /v1/apps/{small_app}/invoke HTTP/1.1\r\nHost: sand\r\n".encode()
    stalled_body = (
        request_line
        + f"Authorization: Bearer {tenant.token}\r\nContent-Type: application/json\r\n".encode()
        + b"Content-Length: 1000\r\n\r\n"
        + b'{"name": "'
    )
    started = time.monotonic()
    bodies = [_slow_socket(cluster_config, stalled_body) for _ in range(140)]
    headers = [_slow_socket(cluster_config, request_line + b"X-Slow: ") for _ in range(20)]
    try:
        # frontends have 64 threads each: were the stalled bodies passed on, these would wait
        assert _ordinary(tenant.client, small_app, 10) == []
        with ThreadPoolExecutor(len(bodies) + len(headers)) as pool:
            body_endings = list(pool.map(_ending, bodies))
            header_endings = list(pool.map(_ending, headers))
        took = time.monotonic() - started
    finally:
        for sock in bodies + headers:
            sock.close()
    statuses = Counter(e.split(b"\r\n", 1)[0].decode() or "closed" for e in body_endings)
    print(f"\nstalled bodies: {dict(statuses)}; headers: {Counter(map(len, header_endings))}")
    print(f"all cut off after {took:.1f} s")
    # nginx ends a request whose body or headers stall by closing its connection: it records
    # 408 (Request Timeout) but sends nothing (ngx_http_finalize_request terminates on a
    # timeout). Nothing else may have been answered: the frontend never saw these requests.
    assert all(e == b"" for e in body_endings), statuses
    assert all(e == b"" for e in header_endings)
    assert took < 30
    assert _ordinary(tenant.client, small_app, 3) == []  # and serves normally afterwards


def test_aRequestLineOverTheGatewaysLimit_is414Json_not500(
    cluster: Supervisor, cluster_config: ClusterConfig
) -> None:
    """nginx answered its own 500 page for a request line over its 8 KiB header buffers (a
    named error location cannot take an unparsed request; the API fuzzer found it with a long
    task token). It is a JSON 414 now, and the next request is served."""
    long_path = "/v1/tasks/" + "%C3%B7" * 3000 + "/success"
    for method in ("GET", "POST"):
        answer = requests.request(method, cluster_config.gateway_url + long_path, timeout=30)
        assert answer.status_code == 414, answer.text
        assert "request line too long" in answer.json()["error"]
    assert requests.get(cluster_config.gateway_url + "/health", timeout=30).status_code == 200

"""Identity on the real stack (issue 11, decision 0017): every call carries a bearer token;
a user sees only their own applications and executions; tokens are stored hashed; a
revocation takes effect at once on every frontend; the host agents answer SAND's own
services only. Each refused attempt leaves everything as it was."""

from __future__ import annotations

import hashlib
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from cassandra.cluster import Cluster
from sand.client import SandApiError, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.tenants import Tenant, make_tenant, renamed_app

pytestmark = pytest.mark.integration

HELLO = Path(__file__).resolve().parents[2] / "examples" / "hello"
HELLO_INPUT = {"name": "  ada   lovelace "}
HELLO_GREETING = "Hello, Ada Lovelace!"


@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def alice(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "alice")


@pytest.fixture(scope="module")
def bob(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "bob")


@pytest.fixture(scope="module")
def alices_app(alice: Tenant, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """examples/hello under a name of alice's own, deployed by her."""
    name = f"hello-{alice.name}"
    alice.client.deploy(
        renamed_app(HELLO, name, tmp_path_factory.mktemp("apps")), backend="process"
    )
    yield name
    alice.client.undeploy(name)


def _call(
    config: ClusterConfig, method: str, path: str, token: str | None, **kw: Any
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return requests.request(method, config.gateway_url + path, headers=headers, timeout=60, **kw)


def _greeting(client: SandClient, app: str) -> Any:
    return client.invoke(app, HELLO_INPUT).output["greeting"]


def test_badCredentials_areRefused_andNothingChanges(
    cluster_config: ClusterConfig, admin: SandClient, alice: Tenant, bob: Tenant, alices_app: str
) -> None:
    """No token, a malformed or unknown one, a revoked one: 401 on every route. Bob's valid
    token on Alice's app: 404 for what exists, as if it did not. Afterwards Alice's app,
    her execution and her token are exactly as before."""
    execution = alice.client.invoke(alices_app, HELLO_INPUT)
    assert execution.status == "SUCCEEDED", execution
    version = alice.client.app(alices_app)["version"]
    revoked = alice.client.create_token(label="to revoke")
    alice.client.revoke_token(revoked.info.id)

    attempts = [
        ("POST", f"/v1/apps/{alices_app}/invoke", {"json": HELLO_INPUT}),
        ("GET", f"/v1/apps/{alices_app}", {}),
        ("GET", f"/v1/apps/{alices_app}/logs", {}),
        ("DELETE", f"/v1/apps/{alices_app}", {}),
        ("GET", f"/v1/executions/{execution.execution_id}", {}),
        ("GET", "/v1/apps", {}),
        ("GET", "/v1/tokens", {}),
        ("POST", "/v1/tokens", {"json": {"user": alice.name}}),
    ]
    unknown = "sand_" + secrets.token_urlsafe(32)[:43].ljust(43, "A")
    for token in (None, "not-a-token", unknown, revoked.token):
        for method, path, kw in attempts:
            answer = _call(cluster_config, method, path, token, **kw)
            assert answer.status_code == 401, (token and token[:8], method, path, answer.text)
            assert answer.headers["WWW-Authenticate"] == 'Bearer realm="sand"'
            assert "token" in answer.json()["error"].lower()

    for method, path, kw in attempts[:5]:
        answer = _call(cluster_config, method, path, bob.token, **kw)
        assert answer.status_code == 404, (method, path, answer.text)
    assert alices_app not in [app["name"] for app in bob.client.apps()]

    assert alice.client.app(alices_app)["version"] == version
    assert _greeting(alice.client, alices_app) == HELLO_GREETING
    assert alice.client.result(execution.execution_id).status == "SUCCEEDED"
    assert alice.client.whoami().user == alice.name
    assert alices_app in [app["name"] for app in admin.apps()]


def test_anotherUsersApp_answersExactlyAsAMissingOne(
    cluster_config: ClusterConfig, bob: Tenant, alices_app: str
) -> None:
    """Names do not leak: the error bob gets for alice's app is the one for no app at all."""
    for method, suffix in (("POST", "/invoke"), ("GET", ""), ("GET", "/logs"), ("DELETE", "")):
        theirs = _call(cluster_config, method, f"/v1/apps/{alices_app}{suffix}", bob.token, json={})
        missing = _call(cluster_config, method, f"/v1/apps/nosuch-app{suffix}", bob.token, json={})
        assert theirs.status_code == missing.status_code == 404, (method, suffix)
        assert theirs.json()["error"] == missing.json()["error"].replace("nosuch-app", alices_app)


def test_deployOverAnotherUsersName_isRefused_theirAppKeepsRunning(
    alice: Tenant, bob: Tenant, alices_app: str, tmp_path: Path
) -> None:
    copy = tmp_path / alices_app
    shutil.copytree(HELLO, copy)
    manifest = copy / "app.yaml"
    manifest.write_text(manifest.read_text().replace("name: hello", f"name: {alices_app}"))
    version = alice.client.app(alices_app)["version"]

    with pytest.raises(SandApiError) as refused:
        bob.client.deploy(copy, backend="process")

    assert refused.value.status == 409
    assert f"'{alices_app}' is taken" in str(refused.value)
    assert alice.client.app(alices_app)["version"] == version
    assert alice.client.app(alices_app)["owner"] == alice.name
    assert _greeting(alice.client, alices_app) == HELLO_GREETING


def test_revocation_takesEffectAtOnce_onEveryFrontend(
    cluster_config: ClusterConfig, alice: Tenant
) -> None:
    """A token made on one frontend works at once on every other; revoked through nginx,
    it is refused at once by each frontend, though each had it cached."""
    frontends = [f"http://127.0.0.1:{port}" for port in cluster_config.ports.frontends]
    assert len(frontends) >= 2
    made = alice.client.create_token(label="short-lived")
    headers = {"Authorization": f"Bearer {made.token}"}
    for frontend in frontends:
        for _ in range(3):  # cached after the first
            answer = requests.get(f"{frontend}/v1/whoami", headers=headers, timeout=10)
            assert answer.status_code == 200, (frontend, answer.text)
            assert answer.json()["user"] == alice.name

    alice.client.revoke_token(made.info.id)

    for frontend in frontends:
        answer = requests.get(f"{frontend}/v1/whoami", headers=headers, timeout=10)
        assert answer.status_code == 401, (frontend, answer.text)
    assert alice.client.whoami().user == alice.name  # her other token is untouched


def test_deletedUser_tokensStopAtOnce(cluster_config: ClusterConfig, admin: SandClient) -> None:
    carol = make_tenant(admin, cluster_config, "carol")
    assert carol.client.whoami().user == carol.name

    assert admin.delete_user(carol.name) == 1

    with pytest.raises(SandApiError) as refused:
        carol.client.whoami()
    assert refused.value.status == 401
    assert carol.name not in [u.name for u in admin.users()]


def test_usersAndOthersTokens_areForAdminsOnly(
    cluster_config: ClusterConfig, admin: SandClient, alice: Tenant, bob: Tenant
) -> None:
    users_before = [u.name for u in admin.users()]
    for attempt in (
        lambda: bob.client.users(),
        lambda: bob.client.create_user(f"mallory-{secrets.token_hex(3)}", role="admin"),
        lambda: bob.client.delete_user(alice.name),
        lambda: bob.client.tokens(user=alice.name),
        lambda: bob.client.create_token(user=alice.name),
    ):
        with pytest.raises(SandApiError) as refused:
            attempt()
        assert refused.value.status == 403, refused.value
        assert "admin" in str(refused.value)
    # another user's token id is answered as unknown
    with pytest.raises(SandApiError) as hidden:
        bob.client.revoke_token(alice.token_id)
    assert hidden.value.status == 404

    assert [u.name for u in admin.users()] == users_before
    assert alice.client.whoami().user == alice.name
    assert [t.id for t in bob.client.tokens()] == [bob.token_id]
    assert bob.client.whoami().role == "user"


def test_tokens_areStoredHashedOnly(cluster_config: ClusterConfig, alice: Tenant) -> None:
    cluster = Cluster(
        [cluster_config.cassandra_contact_point.split(":")[0]],
        port=cluster_config.ports.cassandra_cql,
    )
    try:
        session = cluster.connect("sand")
        rows = [
            *session.execute("SELECT * FROM tokens"),
            *session.execute("SELECT * FROM token_hashes"),
        ]
    finally:
        cluster.shutdown()
    stored = " ".join(str(value) for row in rows for value in row)
    assert alice.token not in stored
    assert hashlib.sha256(alice.token.encode()).hexdigest() in stored


def test_hostAgent_answersOnlySandsOwnServices(cluster_config: ClusterConfig) -> None:
    """Whoever reaches an agent's port (another process on the host, a tenant's grain on the
    process backend) gets nothing without the secret, whatever user it claims to be."""
    agent = cluster_config.host_plans[0].agent_url(cluster_config.ports.host_agent)
    for headers in (
        {},
        {"X-Sand-Internal": "guess"},
        {"X-Sand-User": "admin", "X-Sand-Role": "admin"},
    ):
        for method, path in (("GET", "/v1/apps"), ("GET", "/v1/users"), ("DELETE", "/v1/apps/x")):
            answer = requests.request(method, agent + path, headers=headers, timeout=10)
            assert answer.status_code == 401, (headers, path, answer.text)
    assert requests.get(agent + "/health", timeout=10).status_code == 200

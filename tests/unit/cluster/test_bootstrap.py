"""The admin token of a fresh cluster: made through a host agent with the internal secret,
written 0600, kept while the gateway accepts it, made again when it is refused."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sand.cli import cli
from sand.cluster.bootstrap import AdminToken, BootstrapError, admin_token, ensure_admin_token
from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.supervisor import Started

from tests.unit.fake_sand import FakeSand, fake_sand


@pytest.fixture
def sand(tmp_path: Path) -> Iterator[tuple[FakeSand, ClusterConfig]]:
    """A fake gateway and agent, and a config whose nginx and agent ports are theirs and
    whose internal secret is the agent's."""
    with fake_sand() as running:
        config = load_config(
            env={},
            overrides={
                "cluster": {"state_dir": str(tmp_path / "state")},
                "nginx": {"port": running.gateway_port},
                "host_agent": {"port": running.agent_port},
            },
        )
        running.store.internal_secret = config.internal_secret
        yield running, config


def _calls(fake: FakeSand) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in fake.store.requests]


@pytest.mark.timeout(30)
def test_freshCluster_makesAdminAndToken_throughTheAgent_writes0600(
    sand: tuple[FakeSand, ClusterConfig],
) -> None:
    """No token file: POST /v1/users {admin, admin} and POST /v1/tokens to the agent with
    X-Sand-Internal; the token goes to STATE/conf/admin.token, mode 0600, and works."""
    fake, config = sand
    made = ensure_admin_token(config)
    assert made.created and made.path == config.state_dir / "conf" / "admin.token"
    assert _calls(fake) == [("POST", "/v1/users"), ("POST", "/v1/tokens")]
    for request in fake.store.requests:
        assert request.headers["X-Sand-Internal"] == config.internal_secret
        assert "Authorization" not in request.headers
    assert fake.store.requests[0].body == {"name": "admin", "role": "admin"}
    assert fake.store.requests[1].body == {"user": "admin", "label": "bootstrap"}
    assert stat.S_IMODE(made.path.stat().st_mode) == 0o600
    token = admin_token(config)
    assert fake.store.tokens[token][1:] == ("admin", "bootstrap")
    assert fake.store.users["admin"] == "admin"


@pytest.mark.timeout(30)
def test_again_withAnAcceptedToken_keepsIt(sand: tuple[FakeSand, ClusterConfig]) -> None:
    """Idempotent: a token the gateway accepts (GET /v1/whoami) is left as it is."""
    fake, config = sand
    ensure_admin_token(config)
    first = admin_token(config)
    fake.store.requests.clear()
    again = ensure_admin_token(config)
    assert not again.created
    assert admin_token(config) == first
    assert _calls(fake) == [("GET", "/v1/whoami")]
    assert fake.store.requests[0].headers["Authorization"] == f"Bearer {first}"


@pytest.mark.timeout(30)
def test_refusedToken_isReplaced_andAnExistingAdminIsFine(
    sand: tuple[FakeSand, ClusterConfig],
) -> None:
    """The token was revoked (or the users' store wiped): whoami answers 401, the user
    exists (409 is fine), a new token replaces the file."""
    fake, config = sand
    ensure_admin_token(config)
    old = admin_token(config)
    del fake.store.tokens[old]
    fake.store.requests.clear()
    made = ensure_admin_token(config)
    assert made.created
    assert _calls(fake) == [("GET", "/v1/whoami"), ("POST", "/v1/users"), ("POST", "/v1/tokens")]
    assert admin_token(config) != old and admin_token(config) in fake.store.tokens


@pytest.mark.timeout(30)
def test_wrongInternalSecret_failsNamingTheAgent(sand: tuple[FakeSand, ClusterConfig]) -> None:
    """An agent that refuses the secret: BootstrapError naming the agent and its answer;
    no token file."""
    fake, config = sand
    fake.store.internal_secret = "another cluster's"
    with pytest.raises(BootstrapError) as failed:
        ensure_admin_token(config)
    message = str(failed.value)
    assert f"host agent at http://127.0.0.1:{config.ports.host_agent}" in message
    assert "POST /v1/users" in message
    assert "401" in message and "internal secret" in message
    assert "sand login" not in message  # not the user's token at fault
    assert not config.admin_token_file.exists()


@pytest.mark.timeout(30)
def test_agentNotAnswering_retriesThenFails(tmp_path: Path) -> None:
    """Nothing listens: the calls are retried for retry_s (fake clock), then an error
    names the address."""
    config = load_config(
        env={},
        overrides={"cluster": {"state_dir": str(tmp_path)}, "host_agent": {"port": 1999}},
    )
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(BootstrapError, match="http://127.0.0.1:1999"):
        ensure_admin_token(config, retry_s=3.0, clock=lambda: now[0], sleep=sleep)
    assert now[0] >= 3.0


def test_adminToken_missingFile_saysSandUpWritesIt(tmp_path: Path) -> None:
    config = load_config(env={}, overrides={"cluster": {"state_dir": str(tmp_path)}})
    with pytest.raises(BootstrapError, match="sand up"):
        admin_token(config)


class _UpSupervisor:
    """`sand up`'s supervisor, already up."""

    def up(self) -> list[Started]:
        return []

    def status(self) -> list[object]:
        return []


@pytest.mark.parametrize("fails", [False, True])
def test_sandUp_printsWhereTheAdminTokenIs_orFailsNamingWhy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    """`sand up` bootstraps once all is ready and says where the token is and how to sign
    in; a failed bootstrap is exit 1 with its message, no traceback."""
    from sand.cli import cluster_cmds

    monkeypatch.setenv("SAND_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(cluster_cmds, "supervisor", lambda config: _UpSupervisor())
    token_file = tmp_path / "conf" / "admin.token"

    def bootstrap(config: ClusterConfig) -> AdminToken:
        assert config.state_dir == tmp_path
        if fails:
            raise BootstrapError("creating the user 'admin' (POST /v1/users): HTTP 500: boom")
        return AdminToken(token_file, created=True)

    monkeypatch.setattr(cluster_cmds, "ensure_admin_token", bootstrap)
    (tmp_path / "run").mkdir()
    result = CliRunner(mix_stderr=False).invoke(cli, ["up"])
    if fails:
        assert result.exit_code == 1
        assert "HTTP 500: boom" in result.stderr and "Traceback" not in result.stderr
    else:
        assert result.exit_code == 0, result.stderr
        assert f"sand login < {token_file}" in result.stderr

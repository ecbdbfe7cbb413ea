"""A hostile tenant against the real stack, on both sandbox backends (decision 0016).

The `attacker` app tries one way out per event: read SAND's secrets, write outside /tmp,
gain privileges, run setuid programs, reach the network or another app's Redis keys, fill
/tmp, exhaust memory, fork without end. Every attempt must fail, and the sandbox must serve
a normal event correctly right after each one.
"""

from __future__ import annotations

import shutil
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sand.client import Execution, SandApiError, SandClient
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

pytestmark = pytest.mark.integration

TEST_APPS = Path(__file__).resolve().parent / "apps"
BACKENDS = ("docker", "process")
FIRST_SANDBOX_UID = 2_000_000_000  # SandboxUsers.FIRST_UID
ATTACKER_MEMORY_MB = 256 * 2  # limits.memory_mb of the app, one grain plus one share


@pytest.fixture(scope="module")
def client(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


def _undeploy(client: SandClient, app: str) -> None:
    try:
        client.undeploy(app)
    except SandApiError as exc:
        if exc.status != 404:
            raise


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, client: SandClient) -> Iterator[str]:
    """The attacker app deployed on one backend, for every test of that backend."""
    name: str = request.param
    app = client.deploy(TEST_APPS / "attacker", backend=name)
    assert app["backend"] == name
    yield name
    _undeploy(client, "attacker")


def attack(client: SandClient, payload: dict[str, Any]) -> Execution:
    """Run one attack, then check that the sandbox still serves a normal event correctly."""
    execution = client.invoke("attacker", payload)
    normal = client.invoke("attacker", {"attack": "echo", "value": [1, "two"]})
    assert normal.status == "SUCCEEDED", (payload["attack"], normal.error, normal.cause)
    assert normal.output == {"echo": [1, "two"]}
    return execution


def report(client: SandClient, payload: dict[str, Any]) -> dict[str, Any]:
    execution = attack(client, payload)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    output: dict[str, Any] = execution.output
    return output


def assert_all_denied(attempts: dict[str, str]) -> None:
    allowed = {what: got for what, got in attempts.items() if not got.startswith("denied")}
    assert not allowed, f"attempts that got through: {allowed}"


@pytest.mark.timeout(240)
def test_grain_runsAsUnprivilegedUserWithoutCapabilities(client: SandClient, backend: str) -> None:
    """A grain runs as its app's own uid and gid (not root), with no capabilities,
    no_new_privs set, no other group, and HOME and TMPDIR in the writable /tmp."""
    out = report(client, {"attack": "status"})
    status = out["status"]
    uids = {int(u) for u in status["Uid"].split()}
    assert out["uid"] == out["euid"] >= FIRST_SANDBOX_UID
    assert uids == {out["uid"]}, status["Uid"]
    gids = {int(g) for g in status["Gid"].split()}
    assert gids == {out["uid"]}, status["Gid"]  # the app's own group, equal to its uid
    # none but its own (Docker lists the primary group again, setpriv clears them all)
    assert {int(g) for g in status["Groups"].split()} <= gids
    assert int(status["CapEff"], 16) == 0
    assert int(status["CapPrm"], 16) == 0
    assert int(status["CapBnd"], 16) == 0
    assert status["NoNewPrivs"] == "1"
    assert out["tmp"] == ["/tmp", "/tmp"]


@pytest.mark.timeout(240)
def test_secrets_areUnreadable(
    client: SandClient, backend: str, cluster_config: ClusterConfig
) -> None:
    """The state dir's secrets (Redis's default password in redis.secret, redis.conf and
    cluster.json) cannot be read from a grain; on the host they are root's alone."""
    conf = cluster_config.conf_dir
    secrets = [conf / "redis.secret", conf / "redis.conf", conf / "cluster.json"]
    for path in secrets:
        assert path.is_file(), path  # the attack aims at files that exist
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(conf.stat().st_mode) == 0o700
    attempts = report(
        client, {"attack": "read", "paths": [str(p) for p in secrets] + ["/proc/1/root/etc/shadow"]}
    )
    assert_all_denied(attempts)


@pytest.mark.timeout(240)
def test_writesOutsideTmp_fail(client: SandClient, backend: str) -> None:
    """Nothing outside /tmp is writable: /, /sand, /etc, the app's dir, SAND's code, Redis's
    socket dir."""
    attempts = report(client, {"attack": "write", "paths": ["/", "/sand", "/etc", "/usr", "/var"]})
    assert len(attempts) >= 8
    assert_all_denied(attempts)


@pytest.mark.timeout(240)
def test_tmp_isWritableButSizeLimited(
    client: SandClient, backend: str, cluster_config: ClusterConfig
) -> None:
    """/tmp takes files, up to its size (sandbox.tmp_size_mb) and no further."""
    out = report(client, {"attack": "fill-tmp"})
    assert out["stopped_by"] == "ENOSPC"
    assert 1 <= out["written_mb"] <= cluster_config.sandbox_tmp_size_mb


@pytest.mark.timeout(240)
def test_privilegeGains_fail(client: SandClient, backend: str) -> None:
    """Mounting a file system, opening a raw socket, setuid(0), setgid(0), chroot and chown
    all fail."""
    assert_all_denied(report(client, {"attack": "privileges"}))


@pytest.mark.timeout(240)
def test_setuidPrograms_absentOrPowerless(client: SandClient, backend: str) -> None:
    """The Docker image has no setuid or setgid program; on the process backend the host's
    are on nosuid mounts (the jail binds /usr nosuid), and mount, umount, su, ... fail."""
    out = report(client, {"attack": "setuid-binaries"})
    if backend == "docker":
        assert out["found"] == []
    else:
        assert out["on_nosuid_mount"] == out["found"]
        assert {Path(p).name for p in out["runs"]} >= {"mount", "umount", "su"}
        assert_all_denied(out["runs"])


@pytest.mark.timeout(240)
def test_network_isUnreachable(
    client: SandClient, backend: str, cluster_config: ClusterConfig
) -> None:
    """No connection leaves the sandbox: not to the cluster's Kafka, Cassandra, host agent
    and nginx on 127.0.0.1 (which do listen), nor to public addresses, nor to a Docker
    engine's socket (SAND's, at its host path, or the usual one)."""
    ports = cluster_config.ports
    local = [ports.kafka, ports.cassandra_cql, ports.host_agent, ports.nginx]
    for port in local:  # each target listens: a refusal inside is the sandbox's doing
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    targets = [["127.0.0.1", p] for p in local] + [["1.1.1.1", 443], ["8.8.8.8", 53]]
    engine = str(cluster_config.run_dir / "docker.sock")
    with socket.socket(socket.AF_UNIX) as probe:
        probe.connect(engine)  # SAND's engine listens there
    sockets = [engine, "/var/run/docker.sock", "/run/docker.sock"]
    attempts = report(client, {"attack": "network", "targets": targets, "sockets": sockets})
    assert len(attempts) == len(targets) + len(sockets)
    assert_all_denied(attempts)


@pytest.mark.timeout(240)
def test_anotherAppsKeys_areUnreachable(client: SandClient, backend: str, tmp_path: Path) -> None:
    """With its own Redis login the grain reaches no key of another app, lists no keys, reads
    no ACL or config; without one (the default user) it gets nothing."""
    victim = tmp_path / "victim"
    shutil.copytree(TEST_APPS / "faults", victim)
    manifest = victim / "app.yaml"
    manifest.write_text(manifest.read_text().replace("name: faults", "name: victim"))
    client.deploy(victim, backend="process")
    try:
        assert_all_denied(report(client, {"attack": "redis", "victim": "victim"}))
    finally:
        _undeploy(client, "victim")


@pytest.mark.timeout(240)
def test_memoryBomb_failsNamingTheMemoryLimit(client: SandClient, backend: str) -> None:
    """A grain that allocates without end fails with States.Runtime whose cause names the
    sandbox's memory limit and its size (not a bare "killed by SIGKILL")."""
    execution = attack(client, {"attack": "memory"})
    assert execution.status == "FAILED"
    assert execution.error == "States.Runtime", execution.cause
    assert f"memory limit of {ATTACKER_MEMORY_MB} MiB" in (execution.cause or "")


@pytest.mark.timeout(240)
def test_memorySpreadOverProcesses_failsNamingTheSandboxMemoryLimit(
    client: SandClient, backend: str
) -> None:
    """Memory spread over several processes, each under the per-process limit, meets the
    limit of the sandbox as a whole (its cgroup, decision 0022): the instance the kernel
    kills fails naming the sandbox's memory limit, and the sandbox goes on serving."""
    execution = attack(client, {"attack": "memory-spread"})
    assert execution.status == "FAILED"
    assert execution.error == "States.Runtime", execution.cause
    assert f"memory limit of {ATTACKER_MEMORY_MB} MiB" in (execution.cause or "")
    assert "OOM killer" in (execution.cause or "")


@pytest.mark.timeout(240)
def test_forkBomb_isContainedByThePidsOrMemoryLimit(
    client: SandClient, backend: str, cluster_config: ClusterConfig
) -> None:
    """A fork bomb meets the pids limit (forks are refused) or the sandbox's memory limit
    (the kernel kills bomb processes, never SAND's worker: instances are the OOM killer's
    first choice) and dies with its instance; the sandbox goes on serving.

    The bomb's processes live until the pool kills its instance's process group, just
    after its result: a normal event of the same app that arrives in that moment may lose
    its instance to the memory limit they still hold (the kernel's choice among the app's
    instances), so serving again is checked over a few seconds."""
    execution = client.invoke("attacker", {"attack": "fork-bomb", "seconds": 15})
    if execution.status == "FAILED":
        # the kernel chose the bomb's first process itself: reported as the memory limit
        assert f"memory limit of {ATTACKER_MEMORY_MB} MiB" in (execution.cause or ""), (
            execution.cause
        )
    else:
        out = execution.output
        print(f"{backend}: fork bomb {out}")
        assert out["forks"] > 0
        assert out["refused"] > 0 or out["oom_kills"] > 0, out
    give_up = time.monotonic() + 15
    while True:
        # bounded: a call still running after this answers RUNNING instead of hanging the test
        normal = client.invoke("attacker", {"attack": "echo", "value": [1, "two"]}, timeout_s=60)
        if normal.status == "SUCCEEDED" or time.monotonic() > give_up:
            break
        time.sleep(0.5)
    assert normal.output == {"echo": [1, "two"]}, (
        normal.status,
        normal.error,
        normal.cause,
        _sandbox_state(cluster_config, backend),
    )


def _sandbox_state(config: ClusterConfig, backend: str) -> str:
    """What the attacker's sandbox holds and said last (docker backend), for a failure's
    message: how many processes, by command, and the tail of its log."""
    if backend != "docker":
        return "(process backend: see the host agent's log)"
    import docker

    engine = docker.DockerClient(base_url=config.docker_url)
    try:
        lines = []
        for container in engine.containers.list(filters={"name": "attacker"}):
            processes = container.top().get("Processes") or []
            commands: dict[str, int] = {}
            for row in processes:
                commands[row[-1][:60]] = commands.get(row[-1][:60], 0) + 1
            logs = container.logs(tail=30).decode(errors="replace")
            lines.append(f"{container.name}: {len(processes)} processes {commands}\n{logs}")
        return "\n".join(lines) or "no attacker sandbox"
    finally:
        engine.close()

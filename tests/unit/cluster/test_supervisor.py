"""The supervisor on real (small) processes: readiness, failures, clean-up."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from sand.cli import cli
from sand.cluster import probes
from sand.cluster.config import ClusterConfig, default_home, is_checkout, load_config
from sand.cluster.services import PrerequisiteError
from sand.cluster.specs import ServiceSpec
from sand.cluster.supervisor import StartError, Supervisor


def _config(tmp_path: Path, ready_timeout_s: float = 3) -> ClusterConfig:
    return load_config(
        env={},
        overrides={
            "cluster": {
                "state_dir": str(tmp_path),
                "ready_timeout_s": ready_timeout_s,
                "stop_timeout_s": 2,
            }
        },
    )


def _spec(config: ClusterConfig, name: str, code: str, **kw: object) -> ServiceSpec:
    defaults: dict[str, object] = {
        "address": "-",
        "log": config.logs_dir / f"{name}.log",
        "health": lambda: None,
    }
    defaults.update(kw)
    return ServiceSpec(name=name, argv=(sys.executable, "-c", code), **defaults)  # type: ignore[arg-type]


@pytest.mark.timeout(30)
def test_up_waitsForReadyLine_thenDownStopsIt(tmp_path: Path) -> None:
    """A service is ready when its marker is printed; down stops it and its children."""
    config = _config(tmp_path)
    code = (
        "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); "
        "time.sleep(0.3); print('READY', flush=True); time.sleep(60)"
    )
    sup = Supervisor(config, [_spec(config, "svc", code, ready_marker="READY")])
    [started] = sup.up()
    assert started.ready_s >= 0.3
    children = psutil.Process(started.pid).children(recursive=True)
    assert children, "the service should have spawned a child"
    assert sup.down() == ["svc"]
    assert not psutil.pid_exists(started.pid) or psutil.Process(started.pid).status() == "zombie"
    assert all(not c.is_running() or c.status() == "zombie" for c in children)


@pytest.mark.timeout(30)
def test_down_leaderAlreadyDead_stillKillsItsOrphans(tmp_path: Path) -> None:
    """A service whose leader died while a child lives on (an nginx worker outliving its
    master holds the port): down kills the child too."""
    config = _config(tmp_path)
    code = (
        "import subprocess, time; subprocess.Popen(['sleep', '60']); "
        "time.sleep(0.3); print('READY', flush=True); time.sleep(60)"
    )
    sup = Supervisor(config, [_spec(config, "svc", code, ready_marker="READY")])
    [started] = sup.up()
    [child] = psutil.Process(started.pid).children(recursive=True)
    leader = psutil.Process(started.pid)
    leader.kill()
    leader.wait(5)
    assert child.is_running()

    sup.down()

    child.wait(5)
    assert not child.is_running()


@pytest.mark.timeout(30)
def test_up_portHeldByAProcessStillExiting_waitsForItInsteadOfFailing(tmp_path: Path) -> None:
    """What a SIGKILLed JVM looks like for a moment (CI saw `sand up` fail on it): its main
    thread is a zombie, so it no longer counts as running, while another thread still holds
    the listening socket; no process shows as its holder. Start-up waits for the port."""
    config = _config(tmp_path)
    port = _free_port()
    exiting = subprocess.Popen(
        [sys.executable, "-c", _LEADER_GONE_THREAD_HOLDS_PORT, str(port)],
        stdout=subprocess.PIPE,
    )
    try:
        assert exiting.stdout is not None and exiting.stdout.readline() == b"LISTENING\n"
        while psutil.Process(exiting.pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        code = "print('READY', flush=True); import time; time.sleep(60)"
        sup = Supervisor(config, [_spec(config, "svc", code, ready_marker="READY", ports=(port,))])
        [started] = sup.up()
        assert not started.already_running
        sup.down()
    finally:
        exiting.kill()
        exiting.wait()


_LEADER_GONE_THREAD_HOLDS_PORT = """
import ctypes, socket, sys, threading, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
def close_later():
    time.sleep(1.5)
    s.close()
threading.Thread(target=close_later).start()
print("LISTENING", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.timeout(30)
def test_up_serviceNeverReady_namesItAndLog_andKillsEverything(tmp_path: Path) -> None:
    """A service that never becomes ready fails up with its name and log; nothing stays."""
    config = _config(tmp_path, ready_timeout_s=1)
    fast = _spec(config, "fast", "import time; time.sleep(60)")
    slow = _spec(
        config,
        "slow",
        "import time; print('starting', flush=True); time.sleep(60)",
        ready_marker="NEVER",
    )
    sup = Supervisor(config, [fast, slow])
    with pytest.raises(StartError) as caught:
        sup.up()
    assert caught.value.service == "slow"
    assert "not ready within 1 s" in str(caught.value)
    assert str(config.logs_dir / "slow.log") in str(caught.value)
    assert "starting" in str(caught.value)  # the log tail is shown
    assert all(s.pid is None for s in sup.status())


@pytest.mark.timeout(30)
def test_up_serviceExits_reportsStatusAndLogTail(tmp_path: Path) -> None:
    """A service that dies during start-up is reported with its exit status and log."""
    config = _config(tmp_path)
    dying = _spec(
        config,
        "dying",
        "import sys; print('bad config line 3'); sys.exit(3)",
        health=lambda: "not yet",
    )
    with pytest.raises(StartError, match=r"dying: exited with status 3[\s\S]*bad config line 3"):
        Supervisor(config, [dying]).up()


@pytest.mark.timeout(30)
def test_up_serviceThatGaveUpOnADependency_isStartedAgain_untilReady(tmp_path: Path) -> None:
    """A service whose log says it gave up on a dependency (the host agent on a Cassandra
    still starting) is started again while its ready_timeout_s lasts; one that dies of
    anything else is reported at once, as before."""
    config = _config(tmp_path, ready_timeout_s=10)
    tries = tmp_path / "tries"
    code = (
        "import pathlib, sys, time; p = pathlib.Path(sys.argv[1]); "
        "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n)); "
        "print('cassandra still unreachable after 60000 ms', flush=True) if n < 3 else None; "
        "sys.exit(1) if n < 3 else (print('READY', flush=True), time.sleep(60))"
    )
    spec = dataclasses.replace(
        _spec(config, "agent", code, ready_marker="READY", retry_marker="still unreachable"),
        argv=(sys.executable, "-c", code, str(tries)),
    )
    sup = Supervisor(config, [spec])
    [started] = sup.up()
    assert tries.read_text() == "3", "started three times: two gave up, the third is up"
    assert psutil.pid_exists(started.pid)
    assert sup.down() == ["agent"]
    dying = _spec(
        config,
        "dying",
        "import sys; print('bad config'); sys.exit(1)",
        health=lambda: "not yet",
        retry_marker="still unreachable",
    )
    with pytest.raises(StartError, match=r"dying: exited with status 1"):
        Supervisor(config, [dying]).up()


def test_up_missingBinary_listsItWithTheFix(tmp_path: Path) -> None:
    """A missing prerequisite is named with the command that installs it, before anything starts."""
    config = _config(tmp_path)
    spec = _spec(config, "thing", "pass", needs=("no-such-binary-sand", "/no/such/file.jar"))
    with pytest.raises(PrerequisiteError) as caught:
        Supervisor(config, [spec]).up()
    message = str(caught.value)
    assert "no-such-binary-sand" in message and "/no/such/file.jar" in message
    assert "make setup" in message


def test_up_outsideACheckout_saysSoAndHowToPointAtOne(tmp_path: Path) -> None:
    """Issue 27: a `sand` not installed from a checkout (a wheel) has no builds beside it; `sand
    up` says so and names SAND_HOME, before anything starts (it pointed at parents[4])."""
    config = dataclasses.replace(_config(tmp_path), home=tmp_path / "not-a-checkout")
    spec = _spec(config, "thing", "pass")
    with pytest.raises(PrerequisiteError) as caught:
        Supervisor(config, [spec]).up()
    assert "not-a-checkout is not a SAND checkout" in str(caught.value)
    assert "SAND_HOME" in str(caught.value)


@pytest.mark.parametrize("command", ["up", "status", "down"])
def test_clusterCommands_outsideACheckout_sayItNeedsOne_noTraceback(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0036: `sand` installed from a wheel runs the client and the emulator; its
    cluster commands exit 1 saying they need a checkout (they read its files to describe the
    services) instead of failing on the first missing file."""
    monkeypatch.setenv("SAND_HOME", str(tmp_path / "not-a-checkout"))
    monkeypatch.setenv("SAND_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner(mix_stderr=False).invoke(cli, [command])
    assert result.exit_code == 1, result.output + result.stderr
    assert "not-a-checkout is not a SAND checkout" in result.stderr
    assert "SAND_HOME" in result.stderr
    assert not isinstance(result.exception, FileNotFoundError)


def test_defaultHome_isTheCheckoutThisPackageLiesIn_orSandHome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SAND_HOME", raising=False)
    home = default_home()
    assert is_checkout(home) and (home / "sdk-python" / "src" / "sand").is_dir()
    monkeypatch.setenv("SAND_HOME", str(tmp_path))
    assert default_home() == tmp_path.resolve()


@pytest.mark.timeout(30)
def test_status_reportsUnhealthyWithReason(tmp_path: Path) -> None:
    """status shows a running but sick service as unhealthy with the probe's reason."""
    config = _config(tmp_path)
    sick = {"value": None}
    spec = _spec(config, "svc", "import time; time.sleep(60)", health=lambda: sick["value"])
    sup = Supervisor(config, [spec])
    sup.up()
    try:
        sick["value"] = "GET /health -> 503"  # type: ignore[assignment]
        [status] = sup.status()
        assert status.pid is not None and not status.healthy
        assert status.detail == "GET /health -> 503"
    finally:
        sup.down()


def test_tcpProbe_refusedPort_saysWhich() -> None:
    """The TCP probe names the address it could not reach."""
    reason = probes.tcp(1)()
    assert reason is not None and "127.0.0.1:1" in reason


@pytest.mark.timeout(30)
def test_up_confDir_isRootsAlone(tmp_path: Path) -> None:
    """`sand up` leaves the conf dir 0700 and its files 0600, also files there from before
    (redis.secret, cluster.json, ... hold the keys to every app's data)."""
    config = _config(tmp_path)
    config.conf_dir.mkdir(parents=True)
    stale = config.conf_dir / "internal.secret"
    stale.write_text("s")
    stale.chmod(0o644)
    config.conf_dir.chmod(0o755)
    sup = Supervisor(
        config,
        [
            _spec(
                config,
                "svc",
                "print('READY', flush=True); import time; time.sleep(60)",
                ready_marker="READY",
            )
        ],
    )
    sup.up()
    try:
        assert config.conf_dir.stat().st_mode & 0o777 == 0o700
        assert stale.stat().st_mode & 0o777 == 0o600
    finally:
        sup.down()


@pytest.mark.timeout(30)
def test_down_stopsALayerAtATime_fromTheTop_aLayersServicesAtOnce(tmp_path: Path) -> None:
    """down stops the way in before the agents and the agents before the stores (a
    service may use those below it while it stops), and the services of one layer at once:
    two stores that each take 1 s to stop are both stopped in about 1 s."""
    config = _config(tmp_path)
    stops = tmp_path / "stops"
    stops.mkdir()
    slow_stop = (
        "import pathlib, signal, sys, time\n"
        "def stop(*_):\n"
        f"    pathlib.Path({str(stops)!r}, sys.argv[1] + '.begin').write_text(str(time.time()))\n"
        "    time.sleep(1)\n"
        f"    pathlib.Path({str(stops)!r}, sys.argv[1] + '.end').write_text(str(time.time()))\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('READY', flush=True)\n"
        "while True: time.sleep(1)\n"
    )

    def spec(name: str, layer: int) -> ServiceSpec:
        base = _spec(config, name, slow_stop, ready_marker="READY", layer=layer)
        return dataclasses.replace(base, argv=(*base.argv, name))

    services = [spec("store-a", 0), spec("store-b", 0), spec("agent", 1), spec("way-in", 2)]
    sup = Supervisor(config, services)
    sup.up()
    assert sorted(sup.down()) == ["agent", "store-a", "store-b", "way-in"]

    def at(name: str, edge: str) -> float:
        return float((stops / f"{name}.{edge}").read_text())

    assert at("way-in", "end") <= at("agent", "begin")
    assert at("agent", "end") <= min(at("store-a", "begin"), at("store-b", "begin"))
    # at once: each store began before the other ended
    assert at("store-a", "begin") < at("store-b", "end")
    assert at("store-b", "begin") < at("store-a", "end")


@pytest.mark.timeout(30)
def test_up_startsAServiceOnlyOnceWhatItComesAfterIsReady_oneAlreadyRunningIsNotWaitedFor(
    tmp_path: Path,
) -> None:
    """A replicated cluster's Cassandra nodes join one at a time (decision 0042): a service
    whose ``after`` names another that this up starts is spawned once that one is ready;
    the others start at once. On the next up, with the first still running, the second
    starts without waiting for anything."""
    config = _config(tmp_path, ready_timeout_s=10)
    ready_after = (
        "import sys, time; time.sleep(float(sys.argv[1])); print('READY', flush=True); "
        "time.sleep(60)"
    )

    def spec(name: str, ready_s: float, after: tuple[str, ...] = ()) -> ServiceSpec:
        base = _spec(config, name, ready_after, ready_marker="READY", after=after)
        return dataclasses.replace(base, argv=(*base.argv, str(ready_s)))

    first, second, other = spec("first", 1.0), spec("second", 0.2, ("first",)), spec("o", 0.2)
    sup = Supervisor(config, [first, second, other])
    try:
        started = {s.name: s for s in sup.up()}
        created = {name: psutil.Process(s.pid).create_time() for name, s in started.items()}
        assert created["second"] - created["first"] >= 0.9  # spawned once first was ready
        assert abs(created["o"] - created["first"]) < 0.5  # not held back
        second_pid = started["second"].pid
        psutil.Process(second_pid).kill()
        psutil.Process(second_pid).wait(5)
        again = {s.name: s for s in sup.up()}
        assert again["first"].already_running and not again["second"].already_running
        assert again["second"].ready_s < 0.9
    finally:
        sup.down()


@pytest.mark.timeout(30)
def test_up_aServiceItComesAfterFails_isNotStarted_andNothingIsLeft(tmp_path: Path) -> None:
    """When what a service waits for fails, the service is never spawned and up fails
    naming the one that failed."""
    config = _config(tmp_path, ready_timeout_s=2)
    marker = tmp_path / "second-ran"
    never = _spec(config, "first", "import time; time.sleep(60)", ready_marker="READY")
    second = _spec(
        config,
        "second",
        f"import pathlib; pathlib.Path({str(marker)!r}).touch(); print('READY', flush=True)",
        ready_marker="READY",
        after=("first",),
    )
    sup = Supervisor(config, [never, second])
    with pytest.raises(StartError, match="first: not ready within 2 s"):
        sup.up()
    assert not marker.exists()
    assert sup.pid("first") is None and sup.pid("second") is None

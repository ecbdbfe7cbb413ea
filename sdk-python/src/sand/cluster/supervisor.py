"""Start, stop and inspect the processes of a cluster.

Every service runs in its own session (process group) so that stopping it
stops everything it spawned. Its pid and start time are kept in
``STATE/run/pids/<name>.json`` (a host's own services: ``STATE/hosts/<id>/run/pids/``),
so a recycled pid is never mistaken for ours. With several hosts, ``up`` first builds
their network (``network.ensure``) and records the topology in
``STATE/run/topology.json``; ``down`` kills whatever is left in the hosts' namespaces
and removes the network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
from sand.cluster import leftovers as leftovers_of
from sand.cluster import network
from sand.cluster.config import ClusterConfig
from sand.cluster.services import (
    build_services,
    check_checkout,
    check_prerequisites,
    restrict_conf,
)
from sand.cluster.specs import ServiceSpec

Reporter = Callable[[str], None]
_POLL_S = 0.1
_PORT_GRACE_S = 10.0


class StartError(Exception):
    """A service could not be started; names it, says why and where its log is."""

    def __init__(self, service: str, reason: str, log: Path | None) -> None:
        self.service, self.reason, self.log = service, reason, log
        where = f"\n  read its log: {log}" if log else ""
        tail = _tail(log) if log else ""
        super().__init__(f"{service}: {reason}{where}{tail}")


@dataclass(frozen=True, slots=True)
class Started:
    name: str
    pid: int
    ready_s: float  # from spawn to ready; 0.0 if it was already running
    already_running: bool


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    name: str
    pid: int | None
    address: str
    healthy: bool
    detail: str  # "ok", or why not
    rss_mb: float | None
    log: Path


class Supervisor:
    """Owns the lifecycle of the services of one state directory."""

    def __init__(
        self,
        config: ClusterConfig,
        services: list[ServiceSpec] | None = None,
        *,
        report: Reporter = lambda _: None,
        after_ready: dict[str, Callable[[], None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._services = services if services is not None else build_services(config)
        self._specs = {spec.name: spec for spec in self._services}
        self._report = report
        self._after_ready = after_ready or {}
        self._clock = clock
        self._abort = threading.Event()
        # preparations share files (the agents' pinned jar): one service starts at a time
        self._starting = threading.Lock()

    @property
    def config(self) -> ClusterConfig:
        return self._config

    @property
    def services(self) -> list[ServiceSpec]:
        return list(self._services)

    def pid(self, name: str) -> int | None:
        """The pid of the running service ``name``, or None."""
        return self._pid(name)

    # -- up -------------------------------------------------------------------

    def up(self) -> list[Started]:
        """Start every service that is not running and wait until all are ready.

        Blocks until ready or failed. On failure stops what this call started and
        raises ``StartError``; raises ``PrerequisiteError`` before starting anything
        if something is not installed.
        """
        self._refuse_other_topology()
        bridge = self._config.bridge
        check_checkout(self._config)
        check_prerequisites(self._services)
        if bridge is not None and shutil.which("ip") is None:
            raise StartError("network", "command 'ip' (iproute2) not found on PATH", None)
        for directory in (
            self._config.run_dir / "pids",
            self._config.logs_dir,
            self._config.conf_dir,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        for plan in self._config.host_plans:
            for directory in (plan.pids_dir, plan.logs_dir, plan.conf_dir):
                directory.mkdir(parents=True, exist_ok=True)
        restrict_conf(self._config)
        running = {spec.name: pid for spec in self._services if (pid := self._pid(spec.name))}
        to_start = [spec for spec in self._services if spec.name not in running]
        self._check_ports(to_start)
        if bridge is not None:
            try:
                network.ensure(bridge, self._config.host_plans)
            except network.NetworkError as exc:
                raise StartError("network", str(exc), None) from exc
        self._topology_file.write_text(json.dumps(topology_record(self._config)) + "\n")

        spawned: dict[str, tuple[subprocess.Popen[bytes], float, int]] = {}
        self._abort.clear()
        results = [Started(name, pid, 0.0, True) for name, pid in running.items()]
        # a service waits for those of its `after` that this call starts too (decision 0042)
        ready = {spec.name: threading.Event() for spec in to_start}
        try:
            for spec in to_start:
                if not any(name in ready for name in spec.after):
                    self._start(spec, spawned)
            results += self._wait_ready(to_start, spawned, ready)
        except BaseException:
            self._stop_names([s.name for s in reversed(to_start) if s.name in spawned])
            if not running:  # nothing was up before this call: leave nothing behind
                self._remove_network()
            raise
        return results

    @property
    def _topology_file(self) -> Path:
        return self._config.run_dir / "topology.json"

    def _refuse_other_topology(self) -> None:
        """A cluster runs here with another number of hosts (or subnet): refuse; the
        user must `sand down` first. Only leftovers of a dead one: clear them."""
        recorded = recorded_topology(self._config)
        if recorded is None or topology_record(recorded) == topology_record(self._config):
            return
        old = Supervisor(recorded, report=self._report)
        alive = [spec.name for spec in old.services if old.pid(spec.name) is not None]
        if alive:
            hosts = recorded.host_count
            keep = f"--hosts {hosts}" + (" --replicated" if recorded.replicated else "")
            raise StartError(
                "cluster",
                f"the cluster in {self._config.state_dir} runs with {_topology(recorded)}, "
                f"this config asks for {_topology(self._config)}; "
                f"run `sand down` first to change it (or `sand up {keep}` to keep it)",
                None,
            )
        old.down()

    def _spawn(self, spec: ServiceSpec) -> subprocess.Popen[bytes]:
        spec.log.parent.mkdir(parents=True, exist_ok=True)
        with spec.log.open("ab") as log:
            log.write(
                f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} sand up starts {spec.name}\n".encode()
            )
            log.flush()
            process = subprocess.Popen(
                spec.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **dict(spec.env)},
            )
        created = psutil.Process(process.pid).create_time()
        record = {"pid": process.pid, "create_time": created, "argv": list(spec.argv)}
        self._pidfile(spec.name).write_text(json.dumps(record))
        return process

    def _start(
        self, spec: ServiceSpec, spawned: dict[str, tuple[subprocess.Popen[bytes], float, int]]
    ) -> None:
        """Prepare and spawn ``spec``, recording its process in ``spawned``."""
        with self._starting:
            self._report(f"starting {spec.name}")
            if spec.prepare is not None:
                try:
                    spec.prepare()
                except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
                    raise StartError(spec.name, f"preparing failed: {exc}", spec.log) from exc
            log_offset = _size(spec.log)  # the ready line must be new
            spawned[spec.name] = (self._spawn(spec), self._clock(), log_offset)
            restrict_conf(self._config)  # the files its preparation wrote

    def _wait_ready(
        self,
        specs: list[ServiceSpec],
        spawned: dict[str, tuple[subprocess.Popen[bytes], float, int]],
        ready: dict[str, threading.Event],
    ) -> list[Started]:
        """Wait for every spec at once (one thread each, so a slow probe of one service
        never delays noticing another), starting each not started yet once what it comes
        after is ready; raise the first failure."""
        with ThreadPoolExecutor(max_workers=max(len(specs), 1)) as pool:
            futures = [pool.submit(self._start_after, spec, spawned, ready) for spec in specs]
            try:
                return [future.result() for future in futures]
            except BaseException:
                self._abort.set()
                raise

    def _start_after(
        self,
        spec: ServiceSpec,
        spawned: dict[str, tuple[subprocess.Popen[bytes], float, int]],
        ready: dict[str, threading.Event],
    ) -> Started:
        if spec.name not in spawned:
            for name in spec.after:
                while name in ready and not ready[name].wait(_POLL_S):
                    if self._abort.is_set():
                        raise StartError(
                            spec.name, "start-up abandoned because another service failed", None
                        )
            self._start(spec, spawned)
        started = self._wait_one(spec, *spawned[spec.name])
        ready[spec.name].set()
        return started

    def _wait_one(
        self, spec: ServiceSpec, process: subprocess.Popen[bytes], started_at: float, offset: int
    ) -> Started:
        while not self._abort.is_set():
            code = process.poll()
            elapsed = self._clock() - started_at
            if code is not None and self._may_retry(spec, offset, elapsed):
                self._report(f"{spec.name} gave up on a dependency still starting; again")
                offset = _size(spec.log)
                process = self._spawn(spec)
                continue
            if code is not None:
                raise StartError(
                    spec.name, f"exited with status {code} before it was ready", spec.log
                )
            if _is_ready(spec, offset):
                hook = self._after_ready.get(spec.name)
                if hook is not None:
                    hook()
                self._report(f"{spec.name} ready in {elapsed:.1f} s")
                return Started(spec.name, process.pid, elapsed, False)
            if elapsed > self._config.ready_timeout_s:
                reason = spec.health() or "its ready line did not appear"
                raise StartError(
                    spec.name,
                    f"not ready within {self._config.ready_timeout_s:.0f} s ({reason})",
                    spec.log,
                )
            time.sleep(_POLL_S)
        raise StartError(spec.name, "start-up abandoned because another service failed", spec.log)

    def _may_retry(self, spec: ServiceSpec, offset: int, elapsed: float) -> bool:
        """Whether ``spec``, which exited, only gave up on a dependency that is still starting
        (its log says so since ``offset``) with time left to start it again."""
        return (
            spec.retry_marker is not None
            and elapsed < self._config.ready_timeout_s
            and _log_has(spec.log, spec.retry_marker, offset)
        )

    def _check_ports(self, specs: Iterable[ServiceSpec]) -> None:
        for spec in specs:
            for port in spec.ports:
                # A service killed a moment ago may still hold its ports with no process
                # to show for it: its main thread is already a zombie (so it no longer
                # counts as running) while its other threads tear down, and the sockets
                # close with the last of them. A listener with a live owner fails at once.
                deadline = time.monotonic() + _PORT_GRACE_S
                while not _port_free(port):
                    holder = _port_holder(port)
                    if holder or time.monotonic() >= deadline:
                        raise StartError(
                            spec.name,
                            f"port {port} is already in use{holder}; "
                            f"choose another in the config (see `sand config`)",
                            None,
                        )
                    time.sleep(_POLL_S)

    # -- down -----------------------------------------------------------------

    def down(self) -> list[str]:
        """Stop every service (reverse start order) and any stray process of ours (every
        process of the state dir: ``sand.cluster.leftovers``), and remove the hosts'
        sandbox cgroups.

        Blocks until they are gone. Returns the names of what was stopped.
        """
        stopped = self._stop_by_layer()
        # a host's namespace also holds its sandboxes (process backend) and whatever
        # survived a host that was killed: nothing may outlive the namespace's removal
        leftovers = []
        for plan in self._config.host_plans:
            if plan.netns is not None:
                leftovers += _processes(network.netns_pids(plan.netns))
        leftovers += self._strays()
        for process in leftovers:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(leftovers, timeout=5)
        for cgroup in leftovers_of.remove_cgroups(self._host_dirs()):
            self._report(f"cannot remove the sandbox cgroup {cgroup}")
        # a dockerd killed rather than stopped left its network namespaces mounted there
        for mount in leftovers_of.unmount_below(self._config.docker_exec_root):
            self._report(f"cannot unmount {mount}")
        if self._remove_network():  # else keep the record: the next down retries
            self._topology_file.unlink(missing_ok=True)
        return stopped

    def _remove_network(self) -> bool:
        bridge = self._config.bridge
        if bridge is None:
            return True
        try:
            for removed in network.remove(bridge, self._config.host_plans):
                self._report(f"removed {removed}")
        except network.NetworkError as exc:
            self._report(f"network: {exc}")
            return False
        return True

    def _stop_by_layer(self) -> list[str]:
        """Stops the services a layer at a time from the top (the way in, the agents, then
        what they use: ``ServiceSpec.layer``), the services of one layer at once: none of
        them uses another of its layer, and each may take seconds to stop (a JVM's shutdown
        hooks, Cassandra's flush), which one after another added up to ~25 s per cluster."""
        stopped = []
        for layer in sorted({spec.layer for spec in self._services}, reverse=True):
            names = [spec.name for spec in reversed(self._services) if spec.layer == layer]
            with ThreadPoolExecutor(max_workers=len(names)) as pool:
                for done in pool.map(lambda name: self._stop_names([name]), names):
                    stopped += done
        return stopped

    def _stop_names(self, names: list[str]) -> list[str]:
        stopped = []
        for name in names:
            recorded = self._recorded(name)
            pid = self._pid(name)
            if pid is not None:
                self._report(f"stopping {name} (pid {pid})")
                _stop_group(pid, self._config.stop_timeout_s)
                stopped.append(name)
            elif recorded is not None:
                # The service's leader died (killed, crashed) but members of its group may
                # live on: an nginx worker whose master died keeps serving the port.
                for orphan in _group_members(*recorded):
                    self._report(f"killing {name}'s orphan pid {orphan.pid}")
                    with contextlib.suppress(psutil.Error):
                        orphan.kill()
            self._pidfile(name).unlink(missing_ok=True)
        return stopped

    def _recorded(self, name: str) -> tuple[int, float] | None:
        """The pid and start time the pid file of ``name`` records, if any."""
        try:
            record = json.loads(self._pidfile(name).read_text())
            return int(record["pid"]), float(record["create_time"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def _strays(self) -> list[psutil.Process]:
        """Every other process of our state dir: helpers a service left, sandboxes whose
        agent died (found by their cgroups), containers whose engine died (decision 0021)."""
        return leftovers_of.processes_of(self._config.state_dir, self._host_dirs())

    def _host_dirs(self) -> list[Path]:
        return [plan.state_dir for plan in self._config.host_plans]

    # -- status ---------------------------------------------------------------

    def status(self) -> list[ServiceStatus]:
        """The state of every service, probed now. Never raises for a sick service."""
        statuses = []
        for spec in self._services:
            pid = self._pid(spec.name)
            if pid is None:
                statuses.append(
                    ServiceStatus(
                        spec.name, None, spec.address, False, "not running", None, spec.log
                    )
                )
                continue
            problem = spec.health()
            statuses.append(
                ServiceStatus(
                    name=spec.name,
                    pid=pid,
                    address=spec.address,
                    healthy=problem is None,
                    detail=problem or "ok",
                    rss_mb=_tree_rss_mb(pid),
                    log=spec.log,
                )
            )
        return statuses

    # -- pid files ------------------------------------------------------------

    def _pidfile(self, name: str) -> Path:
        # A directory of our own: services write pid files of theirs into run/.
        spec = self._specs.get(name)
        if spec is not None and spec.pids_dir is not None:
            return spec.pids_dir / f"{name.rsplit('/', 1)[-1]}.json"
        return self._config.run_dir / "pids" / f"{name}.json"

    def _pid(self, name: str) -> int | None:
        """The pid of the running service, or None (a stale pid file is removed)."""
        path = self._pidfile(name)
        try:
            record = json.loads(path.read_text())
            process = psutil.Process(int(record["pid"]))
            if (
                abs(process.create_time() - float(record["create_time"])) < 0.5
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                return process.pid
        except (FileNotFoundError, ValueError, KeyError, TypeError, psutil.Error):
            pass
        path.unlink(missing_ok=True)
        return None


def topology_record(config: ClusterConfig) -> dict[str, object]:
    """What must not change while a cluster runs: its number of hosts, their subnet, and
    whether its brokers and nodes are the hosts' own (replicated)."""
    bridge = config.bridge
    return {
        "hosts": config.host_count,
        "subnet": None if bridge is None else bridge.subnet,
        "replicated": config.replicated,
    }


def _topology(config: ClusterConfig) -> str:
    """Like "hosts = 3 (10.213.7.0/24), replicated"."""
    where = config.bridge.subnet if config.bridge else "no namespaces"
    return f"hosts = {config.host_count} ({where})" + (", replicated" if config.replicated else "")


def recorded_topology(config: ClusterConfig) -> ClusterConfig | None:
    """``config`` with the topology `sand up` last started in its state dir, or None
    if nothing was started (or `sand down` ran since)."""
    try:
        record = json.loads((config.run_dir / "topology.json").read_text())
        return dataclasses.replace(
            config,
            host_count=int(record["hosts"]),
            subnet=str(record["subnet"] or ""),
            replicated=bool(record.get("replicated", False)),
        )
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def running_config(config: ClusterConfig) -> ClusterConfig:
    """The config to stop or inspect what runs in ``config``'s state dir: its recorded
    topology wins over the current config's (`sand up --hosts 3`, then `sand down`)."""
    return recorded_topology(config) or config


def _processes(pids: Iterable[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.append(psutil.Process(pid))
    return found


def _is_ready(spec: ServiceSpec, log_offset: int) -> bool:
    if spec.ready_marker is not None and not _log_has(spec.log, spec.ready_marker, log_offset):
        return False
    return spec.health() is None


def _log_has(log: Path, marker: str, offset: int) -> bool:
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            return marker.encode() in handle.read()
    except FileNotFoundError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _stop_group(pid: int, timeout_s: float) -> None:
    try:
        members = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        # The leader is gone, but members of its group may not be (an nginx worker whose
        # master was killed outlives it, holding the port): the group id still names them.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    _gone, alive = psutil.wait_procs(members, timeout=timeout_s)
    if alive:
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=5)
    # Whatever is still in the group was not among the members listed above (an nginx worker
    # forked meanwhile): once an orphan, it would hold the port of the next cluster.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _group_members(pgid: int, started: float) -> list[psutil.Process]:
    """The live processes of process group ``pgid`` started since ``started`` (epoch s): the
    members of a service's group, not of a later group that reused the id."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.create_time() >= started - 0.5:
                found.append(process)
    return found


def _tree_rss_mb(pid: int) -> float | None:
    try:
        root = psutil.Process(pid)
        total = root.memory_info().rss
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return total / (1024 * 1024)
    except psutil.Error:
        return None


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the servers themselves do: connections of a previous run in TIME-WAIT must
        # not count as "in use", only a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port_holder(port: int) -> str:
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            listening = conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN
            if listening and conn.pid:
                return f" by pid {conn.pid} ({psutil.Process(conn.pid).name()})"
    return ""


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return ""
    return "\n  last lines:\n    " + "\n    ".join(text) if text else ""

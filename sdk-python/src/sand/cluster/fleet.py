"""The hosts of a running cluster seen one by one: their services, their sandboxes'
processes, and killing every process of one host (fault injection).

A host's processes are its Redis, its agent and its sandboxes. With several hosts the
first two run in the host's network namespace (``ip netns pids``); the sandboxes of the
process backend are the agent's descendants (each in namespaces of its own). Docker
sandboxes are the containers labelled with the host as owner, wherever they run.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psutil
from sand.cluster import network
from sand.cluster.config import ClusterConfig
from sand.cluster.services import host_service_name
from sand.cluster.stores import STORE_KINDS
from sand.cluster.supervisor import ServiceStatus, Supervisor
from sand.cluster.topology import HostPlan
from sand.contracts import Env
from sand.credentials import INTERNAL_HEADER
from sand_contracts import constants as _c

_KILL_WAIT_S = 10.0


@dataclass(frozen=True, slots=True)
class SandboxProcesses:
    """The processes of one application's sandbox on one host."""

    app: str | None  # None: a process of the host that names no application
    pids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HostApp:
    """An application as one host's agent sees it: which of its grains run there
    (decision 0013: none when the app's placement leaves the host out)."""

    name: str
    version: int
    state: str  # the sandbox's state, or "not placed on this host"
    grains: tuple[str, ...]  # the grains placed on this host
    placement: dict[str, Any]  # {"hosts": [...], "grains": {grain: [...]}}


@dataclass(frozen=True, slots=True)
class HostStatus:
    id: str
    netns: str | None  # None: the root namespace (a single host)
    ip: str
    services: tuple[ServiceStatus, ...]  # its Redis and agent, named "redis", "host-agent"
    sandboxes: tuple[SandboxProcesses, ...]
    # what its agent answered at GET /v1/apps; None when it did not answer
    apps: tuple[HostApp, ...] | None = None

    @property
    def pids(self) -> list[int]:
        """Every live process of the host (services and sandboxes)."""
        own = [s.pid for s in self.services if s.pid is not None]
        return sorted({*own, *(pid for box in self.sandboxes for pid in box.pids)})

    def to_json(self) -> dict[str, Any]:
        services: dict[str, Any] = {}
        for s in self.services:
            entry: dict[str, Any] = {"pid": s.pid, "alive": s.pid is not None}
            if s.name == "host-agent":
                entry["healthy"] = s.healthy
                entry["url"] = s.address
            services[s.name] = entry
        return {
            "id": self.id,
            "netns": self.netns,
            "ip": self.ip,
            "services": services,
            "sandboxes": [{"app": b.app, "pids": list(b.pids)} for b in self.sandboxes],
            "apps": None
            if self.apps is None
            else [
                {
                    "app": a.name,
                    "version": a.version,
                    "state": a.state,
                    "grains": list(a.grains),
                    "placement": a.placement,
                }
                for a in self.apps
            ],
        }


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    hosts: tuple[HostStatus, ...]
    services: tuple[ServiceStatus, ...]  # the shared ones

    def host(self, host_id: str) -> HostStatus:
        for host in self.hosts:
            if host.id == host_id:
                return host
        raise KeyError(f"no host {host_id!r}; hosts are {', '.join(h.id for h in self.hosts)}")

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": [host.to_json() for host in self.hosts],
            "services": {
                s.name: {
                    "pid": s.pid,
                    "alive": s.pid is not None,
                    "healthy": s.healthy,
                    "address": s.address,
                    "detail": s.detail,
                    "rss_mb": s.rss_mb,
                    "log": str(s.log),
                }
                for s in self.services
            },
        }


def cluster_status(supervisor: Supervisor) -> ClusterStatus:
    """Every host and shared service, probed now. Never raises for a sick one."""
    config = supervisor.config
    by_host: dict[str | None, list[ServiceStatus]] = {}
    specs = {spec.name: spec for spec in supervisor.services}
    for status in supervisor.status():
        host = specs[status.name].host_id
        if host is not None:  # named by kind inside its host
            status = _renamed(status, status.name.rsplit("/", 1)[-1])
        by_host.setdefault(host, []).append(status)
    containers = _containers(supervisor)
    hosts = []
    for plan in config.host_plans:
        services = tuple(by_host.get(plan.id, ()))
        hosts.append(
            HostStatus(
                id=plan.id,
                netns=plan.netns,
                ip=plan.ip,
                services=services,
                sandboxes=(
                    *_process_sandboxes(plan, _own_pids(services)),
                    *containers.get(plan.id, ()),
                ),
                apps=_agent_apps(services, config),
            )
        )
    return ClusterStatus(hosts=tuple(hosts), services=tuple(by_host.get(None, ())))


def kill_host(
    supervisor: Supervisor, host_id: str, sig: signal.Signals = signal.SIGKILL
) -> list[int]:
    """Send ``sig`` to every process of host ``host_id``: its Redis, its agent, its Kafka
    broker and Cassandra node when the cluster is replicated, every process of its
    sandboxes (every process in its namespace, and in its containers).

    A fault-injection tool: it simulates the host dying; the shared services and the
    other hosts are left alone. With SIGKILL, blocks until the processes are gone (up to
    10 s). Returns the pids signalled. Raises ``KeyError`` for an unknown host."""
    plans = {plan.id: plan for plan in supervisor.config.host_plans}
    if host_id not in plans:
        raise KeyError(f"no host {host_id!r}; hosts are {', '.join(plans)}")
    plan = plans[host_id]
    kinds = ("redis", "host-agent", *(STORE_KINDS if supervisor.config.replicated else ()))
    own = [
        pid for kind in kinds if (pid := supervisor.pid(host_service_name(plan, kind))) is not None
    ]
    boxes = [*_process_sandboxes(plan, own), *_containers(supervisor).get(host_id, ())]
    targets = _alive(sorted({*own, *(pid for box in boxes for pid in box.pids)}))
    for process in targets:
        with contextlib.suppress(psutil.Error):
            process.send_signal(sig)
    if sig == signal.SIGKILL:
        psutil.wait_procs(targets, timeout=_KILL_WAIT_S)
    return [process.pid for process in targets]


def _renamed(status: ServiceStatus, name: str) -> ServiceStatus:
    return ServiceStatus(
        name, status.pid, status.address, status.healthy, status.detail, status.rss_mb, status.log
    )


def _process_sandboxes(plan: HostPlan, own: list[int]) -> list[SandboxProcesses]:
    """Sandboxes of the process backend: the descendants of ``own`` (the pids of the
    host's Redis and agent) and, in a namespace, every other process in it. A process
    sandbox runs in network (and mount, pid) namespaces of its own (decision 0016), so it
    is found as the agent's descendant, not in the host's namespace."""
    pids = {child for pid in own for child in _descendants(pid)}
    if plan.netns is not None:
        pids.update(pid for pid in network.netns_pids(plan.netns) if pid not in own)
    by_app: dict[str | None, list[int]] = {}
    for process in _alive(pids):
        app = None
        with contextlib.suppress(psutil.Error):
            app = process.environ().get(Env.APP.value)
        by_app.setdefault(app, []).append(process.pid)
    return [SandboxProcesses(app, tuple(sorted(p))) for app, p in sorted(by_app.items(), key=_key)]


def _own_pids(services: tuple[ServiceStatus, ...]) -> list[int]:
    return [s.pid for s in services if s.pid is not None]


def _key(item: tuple[str | None, list[int]]) -> str:
    return item[0] or ""


def _descendants(pid: int) -> list[int]:
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _alive(pids: Iterable[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def _containers(supervisor: Supervisor) -> dict[str, list[SandboxProcesses]]:
    """The processes of every SAND container, by owner host. Empty when Docker is off
    or its engine does not answer (a dead engine runs no container)."""
    config = supervisor.config
    if config.docker_mode == "off":
        return {}
    if config.docker_mode == "managed" and supervisor.pid("dockerd") is None:
        return {}
    import docker
    import docker.errors
    import requests

    found: dict[str, list[SandboxProcesses]] = {}
    try:
        client = docker.DockerClient(base_url=config.docker_url, timeout=5)
    except (docker.errors.DockerException, requests.RequestException):
        return {}
    try:
        for container in client.containers.list(filters={"label": _c.LABEL_OWNER}):
            owner = container.labels.get(_c.LABEL_OWNER, "")
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                top = container.top()
                column = top["Titles"].index("PID")
                pids = tuple(sorted(int(row[column]) for row in top["Processes"] or []))
                app = container.labels.get(_c.LABEL_APP)
                found.setdefault(owner, []).append(SandboxProcesses(app, pids))
    except (docker.errors.DockerException, requests.RequestException):
        return {}
    finally:
        client.close()
    return found


def _agent_apps(
    services: Iterable[ServiceStatus], config: ClusterConfig
) -> tuple[HostApp, ...] | None:
    """The apps the host's agent runs or knows to be placed elsewhere (GET /v1/apps, as
    the system, with the internal secret); None when the agent is not healthy or does not
    answer within a second."""
    import requests

    agent = next((s for s in services if s.name == "host-agent"), None)
    if agent is None or not agent.healthy or not agent.address:
        return None
    try:
        response = requests.get(
            f"{agent.address}/v1/apps",
            headers={INTERNAL_HEADER: config.internal_secret},
            timeout=1.0,
        )
        response.raise_for_status()
        listed = response.json().get("apps", [])
    except (requests.RequestException, ValueError, AttributeError):
        return None
    return tuple(
        HostApp(
            name=str(app.get("name")),
            version=int(app.get("version", 0)),
            state=str(app.get("state", "")),
            # an agent from before placement runs every grain (no local_grains)
            grains=tuple(str(g) for g in app.get("local_grains", app.get("grains")) or ()),
            placement=app.get("placement") or {},
        )
        for app in listed
        if isinstance(app, dict)
    )

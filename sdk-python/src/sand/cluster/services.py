"""The services of a cluster: how each is configured, started and probed.

Shared services (dockerd, Kafka, Cassandra, frontends, nginx) run once, in the root
network namespace; each host (``topology.HostPlan``) has its own Redis and host agent,
inside the host's network namespace when there are several. This module only
*describes* services (``ServiceSpec``); ``supervisor`` runs them.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from sand.cluster import probes
from sand.cluster.cluster_json import write_cluster_json
from sand.cluster.config import ClusterConfig, is_checkout
from sand.cluster.topology import HostPlan

KAFKA_MAIN = "kafka.Kafka"
KAFKA_STORAGE_TOOL = "kafka.tools.StorageTool"
CASSANDRA_MAIN = "org.apache.cassandra.service.CassandraDaemon"


class PrerequisiteError(Exception):
    """Something `sand up` needs is not installed; the message says what and how."""


LAYER_STORES = 0  # Redis, dockerd, Kafka, Cassandra: none uses another
LAYER_AGENTS = 1  # the host agents: they use the stores while they stop
LAYER_WAY_IN = 2  # frontends and nginx: they use the agents and the stores


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """How to run one service process and how to tell that it is ready."""

    name: str
    argv: tuple[str, ...]
    address: str
    log: Path
    health: probes.Probe
    ports: tuple[int, ...] = ()
    # A line the service prints once ready; None = ready as soon as `health` passes.
    ready_marker: str | None = None
    # a line of its log that says it gave up waiting for a dependency still starting beside it
    # (the host agent waits 60 s for Cassandra): `sand up` starts it again while its own
    # ready_timeout_s lasts, instead of failing on a machine slow to start the dependency
    retry_marker: str | None = None
    needs: tuple[str, ...] = ()  # names of binaries or files that must exist
    prepare: Callable[[], None] | None = field(default=None, compare=False)
    env: tuple[tuple[str, str], ...] = ()
    host_id: str | None = None  # the host it belongs to; None for a shared service
    pids_dir: Path | None = None  # where its pid file goes; None = the cluster's run/pids
    # What it is built on: LAYER_STORES (used by the others), LAYER_AGENTS, LAYER_WAY_IN.
    # `sand down` stops a layer at a time from the top, the services of a layer at once.
    layer: int = LAYER_STORES
    # services that must be ready before this one starts, when `sand up` starts them too (a
    # replicated cluster's Cassandra nodes join one at a time; its agents wait for every
    # broker and node); one already running is not waited for
    after: tuple[str, ...] = ()


# what a host of a replicated cluster runs besides its Redis and agent (decision 0042)
STORE_KINDS = ("kafka", "cassandra")


def host_service_name(plan: HostPlan, kind: str) -> str:
    """``redis`` / ``host-agent`` on a single host (as ever); ``host-2/redis`` with several."""
    return kind if plan.netns is None else f"{plan.id}/{kind}"


def build_services(config: ClusterConfig) -> list[ServiceSpec]:
    """Every service of the cluster, in start order (stop runs it backwards).

    Raises ``PrerequisiteError`` when ``config.home`` is not a checkout: the services' settings
    are read from its files (a `sand` installed from a wheel has none)."""
    check_checkout(config)
    plans = config.host_plans
    single = len(plans) == 1
    # one host: the order of old; several: their Redis beside their agent
    services = [_redis(config, plans[0])] if single else []
    if config.docker_mode == "managed":
        services.append(_dockerd(config))
    if config.replicated:
        # a broker and a node in every host's namespace (decision 0042); the nodes join the
        # ring one at a time, after the first host's, the seed
        stores = [_kafka(config, plan) for plan in plans]
        stores += [_cassandra(config, plan) for plan in plans]
        services += stores
        after = tuple(spec.name for spec in stores)
    else:
        services += [_kafka(config), _cassandra(config)]
        after = ()
    if single:
        services.append(_host_agent(config, plans[0]))
    else:
        for plan in plans:
            services += [_redis(config, plan), _host_agent(config, plan, after)]
    services += [_frontend(config, i, port) for i, port in enumerate(config.ports.frontends, 1)]
    services.append(_nginx(config))
    return services


def check_checkout(config: ClusterConfig) -> None:
    """Raise ``PrerequisiteError`` unless ``config.home`` is a SAND checkout: the services run
    from its builds (a `sand` installed from a wheel has none beside it)."""
    if not is_checkout(config.home):
        raise PrerequisiteError(
            f"{config.home} is not a SAND checkout (no deploy/setup.sh): `sand up` runs the "
            "services built in one; run it from a checkout after `make setup`, or set "
            "SAND_HOME to the checkout"
        )


def check_prerequisites(services: list[ServiceSpec]) -> None:
    """Raise ``PrerequisiteError`` listing everything missing, with the fix."""
    missing: list[str] = []
    for spec in services:
        for need in spec.needs:
            if "/" in need:
                if not Path(need).exists():
                    missing.append(f"{spec.name}: {need} does not exist")
            elif shutil.which(need) is None:
                missing.append(f"{spec.name}: command '{need}' not found on PATH")
    if missing:
        raise PrerequisiteError(
            "missing prerequisites (run `make setup` to install them):\n  " + "\n  ".join(missing)
        )


def restrict_conf(config: ClusterConfig) -> None:
    """Make every conf dir of the cluster readable by root alone: the dir 0700, its files 0600.

    They hold the keys to every app's data (``redis.secret``, ``redis.conf`` and
    ``cluster.json`` carry the password of Redis's default user, and any other secret a
    service keeps there). SAND's services run as root; grains run as unprivileged users
    (decision 0016) and must not read them. The dir's mode alone shuts them out, so a
    file written later with a laxer mode is still safe until the next call fixes it."""
    for conf in {config.conf_dir, *(plan.conf_dir for plan in config.host_plans)}:
        conf.mkdir(parents=True, exist_ok=True)
        conf.chmod(0o700)
        for path in conf.iterdir():
            if path.is_file() and not path.is_symlink():
                path.chmod(0o600)


def _write_cluster_json_quietly(config: ClusterConfig) -> None:
    write_cluster_json(config)


def _render(config: ClusterConfig, template: str, path: Path, **extra: str) -> Path:
    values = {
        "service_ip": config.service_ip,
        "run_dir": str(config.run_dir),
        "logs_dir": str(config.logs_dir),
        "redis_socket": str(config.redis_socket),
        "redis_dir": str(config.data_dir / "redis"),
        "redis_maxmemory_mb": str(config.redis_maxmemory_mb),
        "redis_password": config.redis_password,
        "kafka_port": str(config.ports.kafka),
        "kafka_partitions": str(config.kafka_partitions),
        "cassandra_cql_port": str(config.ports.cassandra_cql),
        "cassandra_storage_port": str(config.ports.cassandra_storage),
        "nginx_dir": str(config.state_dir / "nginx"),
        "nginx_port": str(config.ports.nginx),
        **extra,
    }
    text = Template((config.home / "deploy" / "conf" / template).read_text()).substitute(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def nginx_body_dir(config: ClusterConfig) -> Path:
    """Where nginx spools application archives (request buffering, decision 0024), made ready.

    nginx's workers must write there. Started by root, they run as ``nobody``: the directory
    is then handed to ``nobody``, and when the state dir sits where ``nobody`` cannot enter
    (``/root/.sand``) it moves to a private directory under the system's temp dir instead.
    """
    wanted = config.state_dir / "nginx" / "client_body"
    if os.geteuid() != 0:
        wanted.mkdir(parents=True, exist_ok=True)
        return wanted
    nobody = pwd.getpwnam("nobody")
    place = wanted
    if not _enterable_by_others(wanted.parent):
        digest = hashlib.sha256(str(config.state_dir).encode()).hexdigest()[:12]
        place = Path(tempfile.gettempdir()) / f"sand-nginx-{digest}"
    place.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(place, nobody.pw_uid, nobody.pw_gid)
    place.chmod(0o700)
    return place


def _enterable_by_others(path: Path) -> bool:
    """Whether a user with no rights of its own may reach ``path`` (every ancestor o+x)."""
    path.mkdir(parents=True, exist_ok=True)
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def _lib(config: ClusterConfig, name: str) -> Path:
    return config.home / "deploy" / "lib" / name


def _log(config: ClusterConfig, name: str) -> Path:
    return config.logs_dir / f"{name}.log"


def _in_netns(plan: HostPlan, argv: tuple[str, ...]) -> tuple[str, ...]:
    # nsenter enters the host's network namespace only and execs argv in place: the pid we
    # record is the service's own. Not `ip netns exec`: it also gives the process a mount
    # namespace with a /sys of its own, without the machine's cgroup mounts, and the agent
    # needs those for its process sandboxes' CPU and memory limits (decision 0022).
    if plan.netns is None:
        return argv
    return ("nsenter", f"--net=/run/netns/{plan.netns}", "--", *argv)


def _redis(config: ClusterConfig, plan: HostPlan) -> ServiceSpec:
    conf = plan.conf_dir / "redis.conf"
    data = plan.data_dir / "redis"

    def prepare() -> None:
        data.mkdir(parents=True, exist_ok=True)
        plan.redis_socket.parent.mkdir(parents=True, exist_ok=True)
        _render(
            config,
            "redis.conf",
            conf,
            redis_socket=str(plan.redis_socket),
            redis_dir=str(data),
        )

    return ServiceSpec(
        name=host_service_name(plan, "redis"),
        argv=_in_netns(plan, ("redis-server", str(conf))),
        address=f"unix:{plan.redis_socket}",
        log=plan.logs_dir / "redis.log",
        health=probes.redis_ping(plan.redis_socket, lambda: config.redis_password),
        needs=("redis-server",) if plan.netns is None else ("redis-server", "nsenter"),
        prepare=prepare,
        host_id=plan.id,
        pids_dir=plan.pids_dir,
    )


def _dockerd(config: ClusterConfig) -> ServiceSpec:
    root = config.data_dir / "docker"
    sock = config.run_dir / "docker.sock"
    return ServiceSpec(
        name="dockerd",
        # Sandboxes talk to the host only through unix sockets mounted into them,
        # so the engine needs no bridge and no iptables rules (which would also
        # collide with a system dockerd on the same machine).
        argv=(
            "dockerd",
            f"--data-root={root}",
            f"--exec-root={config.docker_exec_root}",
            f"--host=unix://{sock}",
            f"--pidfile={config.docker_exec_root / 'dockerd.pid'}",
            "--bridge=none",
            "--iptables=false",
            "--ip-masq=false",
        ),
        address=f"unix://{sock}",
        log=_log(config, "dockerd"),
        health=probes.docker_ping(sock),
        needs=("dockerd", "containerd", "runc"),
        prepare=lambda: root.mkdir(parents=True, exist_ok=True),
    )


def _kafka_cluster_id(config: ClusterConfig) -> str:
    """The KRaft cluster id every broker's storage is formatted with: made once per state dir
    (22 characters, as Kafka's own tool makes them), so the brokers of a replicated cluster
    agree on it."""
    path = config.conf_dir / "kafka.cluster-id"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(uuid.uuid4().hex[:22])
    return path.read_text().strip()


@dataclass(frozen=True, slots=True)
class _StoreNode:
    """Where one Kafka broker and one Cassandra node run: the cluster's one pair, in the
    root namespace and the state dir's own dirs (``plan`` None), or a replicated cluster's
    host's own (decision 0042)."""

    config: ClusterConfig
    plan: HostPlan | None

    def name(self, kind: str) -> str:
        return kind if self.plan is None else f"{self.plan.id}/{kind}"

    @property
    def ip(self) -> str:
        return self.config.service_ip if self.plan is None else self.plan.ip

    @property
    def conf_dir(self) -> Path:
        return self.config.conf_dir if self.plan is None else self.plan.conf_dir

    @property
    def data_dir(self) -> Path:
        return self.config.data_dir if self.plan is None else self.plan.data_dir

    def log(self, kind: str) -> Path:
        return _log(self.config, kind) if self.plan is None else self.plan.logs_dir / f"{kind}.log"

    def argv(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        return argv if self.plan is None else _in_netns(self.plan, argv)

    def ports(self, *ports: int) -> tuple[int, ...]:
        # in a namespace of its own a port is free whatever the root namespace holds
        return ports if self.plan is None else ()

    def needs(self, *needs: str) -> tuple[str, ...]:
        return needs if self.plan is None else (*needs, "nsenter")

    @property
    def host_id(self) -> str | None:
        return None if self.plan is None else self.plan.id

    @property
    def pids_dir(self) -> Path | None:
        return None if self.plan is None else self.plan.pids_dir


def _kafka_settings(node: _StoreNode) -> dict[str, str]:
    """The broker's role, id, quorum and listeners (the template's ``kafka_*`` values)."""
    config, ports = node.config, node.config.ports
    replicas = config.replication_factor
    common = {
        "kafka_ip": node.ip,
        "kafka_dir": str(node.data_dir / "kafka"),
        "replication_factor": str(replicas),
        # a majority of the replicas, so acks=all survives one broker lost of three
        "min_insync": str(replicas // 2 + 1),
    }
    if node.plan is None:
        return {
            **common,
            "broker_session_ms": "9000",
            "broker_heartbeat_ms": "2000",
            "quorum_fetch_ms": "2000",
            "quorum_election_ms": "1000",
            "kafka_roles": "broker,controller",
            "kafka_node_id": "1",
            "kafka_voters": f"1@127.0.0.1:{ports.kafka_controller}",
            "kafka_listeners": (
                f"PLAINTEXT://{node.ip}:{ports.kafka},CONTROLLER://127.0.0.1:{ports.kafka_controller}"
            ),
        }
    controllers = config.host_plans[:replicas]
    controller = node.plan in controllers
    listeners = f"PLAINTEXT://{node.ip}:{ports.kafka}"
    return {
        **common,
        "broker_session_ms": "2000",
        "broker_heartbeat_ms": "500",
        "quorum_fetch_ms": "1000",
        "quorum_election_ms": "500",
        "kafka_roles": "broker,controller" if controller else "broker",
        "kafka_node_id": str(node.plan.index),
        "kafka_voters": ",".join(f"{p.index}@{p.ip}:{ports.kafka_controller}" for p in controllers),
        "kafka_listeners": (
            f"{listeners},CONTROLLER://{node.ip}:{ports.kafka_controller}"
            if controller
            else listeners
        ),
    }


def _kafka(config: ClusterConfig, plan: HostPlan | None = None) -> ServiceSpec:
    node = _StoreNode(config, plan)
    lib = _lib(config, "kafka")
    conf = node.conf_dir / "kafka.properties"
    log4j = config.home / "deploy" / "conf" / "log4j2.properties"
    data = node.data_dir / "kafka"
    bootstrap = f"{node.ip}:{config.ports.kafka}"

    def prepare() -> None:
        _render(config, "kafka.properties", conf, **_kafka_settings(node))
        if not (data / "meta.properties").exists():
            # KRaft storage is formatted once per data dir, with the cluster's id
            data.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [
                    "java",
                    "-cp",
                    f"{lib}/*",
                    f"-Dlog4j2.configurationFile={log4j}",
                    KAFKA_STORAGE_TOOL,
                    "format",
                    "-t",
                    _kafka_cluster_id(config),
                    "-c",
                    str(conf),
                ],
                check=True,
                capture_output=True,
                timeout=120,
            )

    return ServiceSpec(
        name=node.name("kafka"),
        argv=node.argv(
            (
                "java",
                f"-Xms{config.kafka_heap_mb}m",
                f"-Xmx{config.kafka_heap_mb}m",
                "-XX:+UseG1GC",
                *_quick_jit(config),
                f"-Dlog4j2.configurationFile={log4j}",
                f"-Dsand.state={config.state_dir}",
                "-cp",
                f"{lib}/*",
                KAFKA_MAIN,
                str(conf),
            )
        ),
        address=bootstrap,
        log=node.log("kafka"),
        health=probes.kafka_metadata(bootstrap),
        ports=node.ports(config.ports.kafka, config.ports.kafka_controller),
        ready_marker="Kafka Server started",
        needs=node.needs("java", str(lib / "kafka_2.13-4.1.0.jar")),
        prepare=prepare,
        host_id=node.host_id,
        pids_dir=node.pids_dir,
    )


# A node that joins a ring gossips with its seed before it takes tokens; Cassandra waits this
# long for the ring's state (the seed itself, and a single node, wait 0: cassandra-jvm17.options)
JOIN_RING_DELAY_MS = 5000


def _cassandra(config: ClusterConfig, plan: HostPlan | None = None) -> ServiceSpec:
    node = _StoreNode(config, plan)
    lib = _lib(config, "cassandra")
    conf_dir = node.conf_dir / "cassandra"
    data = node.data_dir / "cassandra"
    deploy_conf = config.home / "deploy" / "conf"
    options = [
        line.strip()
        for line in (deploy_conf / "cassandra-jvm17.options").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    seed = config.host_plans[0] if plan is not None else None
    joins = plan is not None and plan != seed
    if joins:
        # the JVM takes the last of a repeated -D
        options.append(f"-Dcassandra.ring_delay_ms={JOIN_RING_DELAY_MS}")
    contact = f"{node.ip}:{config.ports.cassandra_cql}"

    def prepare() -> None:
        data.mkdir(parents=True, exist_ok=True)
        _render(
            config,
            "cassandra.yaml",
            conf_dir / "cassandra.yaml",
            cassandra_dir=str(data),
            cassandra_ip=node.ip,
            cassandra_seed=node.ip if seed is None else seed.ip,
            replication_factor=str(config.replication_factor),
        )
        shutil.copy(deploy_conf / "logback.xml", conf_dir / "logback.xml")

    # a replicated cluster's nodes join one at a time, each after the one before it: Cassandra
    # refuses to bootstrap while another node is joining
    previous = config.host_plans[plan.index - 2] if plan is not None and joins else None
    return ServiceSpec(
        name=node.name("cassandra"),
        argv=node.argv(
            (
                "java",
                f"-Xms{config.cassandra_heap_mb}m",
                f"-Xmx{config.cassandra_heap_mb}m",
                *options,
                *_quick_jit(config),
                f"-Dcassandra.config=file://{conf_dir / 'cassandra.yaml'}",
                "-Dcassandra-foreground=yes",
                f"-Dcassandra.storagedir={data}",
                f"-Dcassandra.jmx.local.port={config.ports.cassandra_jmx}",
                f"-Dlogback.configurationFile={conf_dir / 'logback.xml'}",
                "-cp",
                f"{conf_dir}:{lib}/*",
                CASSANDRA_MAIN,
            )
        ),
        address=contact,
        log=node.log("cassandra"),
        health=probes.cassandra_query(config.ports.cassandra_cql, node.ip),
        ports=node.ports(
            config.ports.cassandra_cql,
            config.ports.cassandra_storage,
            config.ports.cassandra_jmx,
        ),
        ready_marker="Startup complete",
        needs=node.needs("java", str(lib / "cassandra-all-5.0.5.jar")),
        prepare=prepare,
        after=() if previous is None else (_StoreNode(config, previous).name("cassandra"),),
        host_id=node.host_id,
        pids_dir=node.pids_dir,
    )


# stop the JIT at its first, quick compiler (C1)
C1_ONLY = ("-XX:TieredStopAtLevel=1",)


def _quick_jit(config: ClusterConfig) -> tuple[str, ...]:
    """C1 only, for a short-lived cluster (``cluster.quick_jit``): measured in a test stack's
    first minutes, C2's compiler threads took about half the CPU of Kafka, Cassandra and the
    agent (decision 0037)."""
    return C1_ONLY if config.quick_jit else ()


# glibc gives each thread that allocates natively an arena of its own, up to 8 per core,
# each growing in 64 MB steps and rarely returned: two keep a JVM's native heap small.
JAVA_ENV: tuple[tuple[str, str], ...] = (("MALLOC_ARENA_MAX", "2"),)


def _java_service(
    config: ClusterConfig,
    name: str,
    jar: Path,
    heap_mb: int,
    cluster_json: Path | None = None,
    *,
    quick_compiler_only: bool = False,
) -> tuple[str, ...]:
    # Serial GC: these are small heaps on a 2-core machine shared with Kafka and
    # Cassandra; a concurrent collector would only add threads. Every other region of
    # the JVM's memory gets a ceiling too (decision 0023), so that a service's resident
    # memory is bounded under any load: by default direct buffers (Netty's, under the
    # Redis and Cassandra clients) may take as much as the heap again and metaspace has
    # no limit. glibc's arenas are capped by MALLOC_ARENA_MAX (JAVA_ENV).
    # A frontend's work per call is system calls and small copies: its code compiled by C1
    # alone costs the same per call as C2's, and C2 itself burned 1-1.5 ms of CPU per call
    # for the first 10,000s of calls (decision 0030). The agent's C1 code cost 60 % more.
    compilers = C1_ONLY if quick_compiler_only else ()
    return (
        "java",
        f"-Xmx{heap_mb}m",
        "-XX:MaxDirectMemorySize=128m",
        "-XX:MaxMetaspaceSize=256m",
        "-XX:ReservedCodeCacheSize=128m",
        "-XX:+UseSerialGC",
        *compilers,
        f"-Dsand.service={name}",
        "-jar",
        str(jar),
        "--config",
        str(cluster_json or config.conf_dir / "cluster.json"),
    )


def _pinned_jar(config: ClusterConfig, built: Path) -> Path:
    """Where a service runs its jar from: a copy in the state dir named by the build's
    time, never overwritten. A JVM loads classes from its jar lazily, so running the
    build's own file would break a live service the moment `make` rebuilds it."""
    try:
        stamp = built.stat().st_mtime_ns
    except FileNotFoundError:
        return built  # reported by the prerequisite check, which names the build's path
    return config.state_dir / "lib" / f"{built.stem}-{stamp}.jar"


def _pin(built: Path, pinned: Path, keep: int = 3) -> None:
    if pinned == built or pinned.exists():
        return
    pinned.parent.mkdir(parents=True, exist_ok=True)
    partial = pinned.with_suffix(".partial")
    shutil.copyfile(built, partial)
    partial.replace(pinned)
    # older copies may still run a service until its next restart: keep a few
    copies = sorted(pinned.parent.glob(f"{built.stem}-*.jar"), key=lambda p: p.stat().st_mtime)
    for old in copies[:-keep]:
        old.unlink(missing_ok=True)


def _host_agent(config: ClusterConfig, plan: HostPlan, after: tuple[str, ...] = ()) -> ServiceSpec:
    jar = config.home / "host-agent" / "target" / "host-agent.jar"
    pinned = _pinned_jar(config, jar)
    name = host_service_name(plan, "host-agent")
    port = config.ports.host_agent

    def prepare() -> None:
        _pin(jar, pinned)
        _write_cluster_json_quietly(config)

    java = _java_service(
        config,
        name,
        pinned,
        config.host_agent_heap_mb,
        plan.conf_dir / "cluster.json",
        quick_compiler_only=config.quick_jit,
    )
    return ServiceSpec(
        name=name,
        argv=_in_netns(plan, java),
        address=plan.agent_url(port),
        log=plan.logs_dir / "host-agent.log",
        # reached from the root namespace, through the bridge when in a namespace
        health=probes.http_ok(port, host=plan.ip),
        # in a namespace of its own the port is free whatever the root namespace holds
        ports=(port,) if plan.netns is None else (),
        needs=("java", str(jar)) if plan.netns is None else ("java", str(jar), "nsenter"),
        prepare=prepare,
        retry_marker="still unreachable after",  # DependencyMonitor's start-up failure
        host_id=plan.id,
        layer=LAYER_AGENTS,
        # replicated: topics of 3 replicas need 3 brokers, quorum reads 2 nodes
        after=after,
        pids_dir=plan.pids_dir,
        env=JAVA_ENV,
    )


def _frontend(config: ClusterConfig, index: int, port: int) -> ServiceSpec:
    jar = config.home / "frontend" / "target" / "frontend.jar"
    pinned = _pinned_jar(config, jar)
    name = f"frontend-{index}"

    def prepare() -> None:
        _pin(jar, pinned)
        _write_cluster_json_quietly(config)

    return ServiceSpec(
        name=name,
        argv=(
            *_java_service(config, name, pinned, config.frontend_heap_mb, quick_compiler_only=True),
            "--port",
            str(port),
        ),
        address=f"http://127.0.0.1:{port}",
        log=_log(config, name),
        health=probes.http_ok(port),
        ports=(port,),
        needs=("java", str(jar)),
        prepare=prepare,
        env=JAVA_ENV,
        layer=LAYER_WAY_IN,
    )


def _nginx(config: ClusterConfig) -> ServiceSpec:
    conf = config.conf_dir / "nginx.conf"
    # max_fails=0: no request a client sends marks a frontend down (decision 0024).
    upstream = "\n".join(
        f"        server 127.0.0.1:{p} max_fails=0;" for p in config.ports.frontends
    )

    def prepare() -> None:
        for sub in ("proxy", "fastcgi", "uwsgi", "scgi"):
            (config.state_dir / "nginx" / sub).mkdir(parents=True, exist_ok=True)
        _render(
            config,
            "nginx.conf",
            conf,
            upstream_servers=upstream,
            client_body_dir=str(nginx_body_dir(config)),
            invoke_max_body=f"{config.max_payload_kb}k",
        )

    return ServiceSpec(
        name="nginx",
        argv=("nginx", "-p", str(config.state_dir / "nginx"), "-c", str(conf)),
        address=config.gateway_url,
        log=_log(config, "nginx"),
        health=probes.http_ok(config.ports.nginx),
        ports=(config.ports.nginx,),
        needs=("nginx",),
        prepare=prepare,
        layer=LAYER_WAY_IN,
    )

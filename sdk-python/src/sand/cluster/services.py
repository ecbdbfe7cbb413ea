"""The services of a cluster: which run, in what order, and how each is configured, started
and probed.

Shared services (dockerd, Kafka, Cassandra, frontends, nginx) run once, in the root
network namespace; each host (``topology.HostPlan``) has its own Redis and host agent,
inside the host's network namespace when there are several. The global layer's stores
(Kafka and Cassandra) are described in ``stores``, the others here. This module only
*describes* services (``specs.ServiceSpec``); ``supervisor`` runs them.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

from sand.cluster import probes
from sand.cluster.cluster_json import write_cluster_json
from sand.cluster.config import ClusterConfig, is_checkout
from sand.cluster.specs import (
    C1_ONLY,
    LAYER_AGENTS,
    LAYER_WAY_IN,
    ServiceSpec,
    in_netns,
    log_path,
    render,
    unverified,
)
from sand.cluster.stores import cassandra_spec, kafka_spec
from sand.cluster.topology import HostPlan


class PrerequisiteError(Exception):
    """Something `sand up` needs is not installed; the message says what and how."""


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
        stores = [kafka_spec(config, plan) for plan in plans]
        stores += [cassandra_spec(config, plan) for plan in plans]
        services += stores
        after = tuple(spec.name for spec in stores)
    else:
        services += [kafka_spec(config), cassandra_spec(config)]
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


def _redis(config: ClusterConfig, plan: HostPlan) -> ServiceSpec:
    conf = plan.conf_dir / "redis.conf"
    data = plan.data_dir / "redis"

    def prepare() -> None:
        data.mkdir(parents=True, exist_ok=True)
        plan.redis_socket.parent.mkdir(parents=True, exist_ok=True)
        render(
            config,
            "redis.conf",
            conf,
            redis_socket=str(plan.redis_socket),
            redis_dir=str(data),
        )

    return ServiceSpec(
        name=host_service_name(plan, "redis"),
        argv=in_netns(plan, ("redis-server", str(conf))),
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
        log=log_path(config, "dockerd"),
        health=probes.docker_ping(sock),
        needs=("dockerd", "containerd", "runc"),
        prepare=lambda: root.mkdir(parents=True, exist_ok=True),
    )


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
        *unverified(config),
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
        argv=in_netns(plan, java),
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
        log=log_path(config, name),
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
        render(
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
        log=log_path(config, "nginx"),
        health=probes.http_ok(config.ports.nginx),
        ports=(config.ports.nginx,),
        needs=("nginx",),
        prepare=prepare,
        layer=LAYER_WAY_IN,
    )

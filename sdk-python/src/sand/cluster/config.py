"""Typed, layered configuration of a single-host cluster.

Layers, later wins: the committed ``defaults.toml`` beside this module, a
config file, ``SAND_<SECTION>_<KEY>`` environment variables, explicit
overrides (tests). Everything is validated once, here, into frozen values.
"""

from __future__ import annotations

import os
import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sand import contracts
from sand.cluster.topology import LOOPBACK, MAX_HOSTS, Bridge, HostPlan, bridge_for, plan_hosts

# bounds both languages check, from contracts.thrift
MAX_RETENTION_DAYS = contracts.CONFIG_MAX_RETENTION_DAYS
MAX_QUEUED = contracts.CONFIG_MAX_QUEUED
MAX_RETRY_AFTER_S = contracts.CONFIG_MAX_RETRY_AFTER_S
MAX_PAYLOAD_KB = contracts.CONFIG_MAX_PAYLOAD_KB

# replicas of each partition and row on a replicated cluster; writes wait for a majority (2)
REPLICAS = 3
_DEFAULTS = Path(__file__).with_name("defaults.toml")
_DOCKER_MODES = ("managed", "external", "off")
_BACKENDS = ("docker", "process")
_SUBNET = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0/24")


class ConfigError(Exception):
    """A configuration value is missing or breaks a rule; the message names it."""


@dataclass(frozen=True, slots=True)
class Admission:
    """``[admission]``: how much queued work a host takes before invocations get 429
    (decision 0023)."""

    max_queued_per_app: int = 8
    max_queued_per_host: int = 32
    retry_after_s: int = 1
    adaptive: bool = False


@dataclass(frozen=True, slots=True)
class Ports:
    kafka: int
    kafka_controller: int
    cassandra_cql: int
    cassandra_storage: int
    cassandra_jmx: int
    frontends: tuple[int, ...]
    host_agent: int
    nginx: int

    def named(self) -> dict[str, int]:
        """Every TCP port the cluster listens on, by the service that owns it."""
        named = {
            "kafka": self.kafka,
            "kafka controller": self.kafka_controller,
            "cassandra cql": self.cassandra_cql,
            "cassandra storage": self.cassandra_storage,
            "cassandra jmx": self.cassandra_jmx,
            "host-agent": self.host_agent,
            "nginx": self.nginx,
        }
        for index, port in enumerate(self.frontends, start=1):
            named[f"frontend-{index}"] = port
        return named


# cgroup v2's cpu.weight range (contracts.thrift; the Java side checks the same bounds)
MIN_CPU_WEIGHT = contracts.CONFIG_MIN_CPU_WEIGHT
MAX_CPU_WEIGHT = contracts.CONFIG_MAX_CPU_WEIGHT


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """The operator's defaults and maxima for an app's ``limits.cpu_weight`` and
    ``limits.memory_mb`` (``[sandbox]``, decision 0022)."""

    cpu_weight: int = 100
    max_cpu_weight: int = 100
    memory_mb: int = 512
    max_memory_mb: int = 4096
    max_sandbox_memory_mb: int = 8192

    def to_json(self) -> dict[str, int]:
        return {
            "cpu_weight": self.cpu_weight,
            "max_cpu_weight": self.max_cpu_weight,
            "memory_mb": self.memory_mb,
            "max_memory_mb": self.max_memory_mb,
            "max_sandbox_memory_mb": self.max_sandbox_memory_mb,
        }


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """The resolved configuration of one cluster: its shared services and its hosts."""

    home: Path  # the source checkout: jars, deploy/ templates, the venv
    state_dir: Path
    host_id: str
    ready_timeout_s: float
    stop_timeout_s: float
    ports: Ports
    redis_maxmemory_mb: int
    kafka_heap_mb: int
    kafka_partitions: int
    cassandra_heap_mb: int
    docker_mode: str
    docker_host: str
    base_image: str
    frontend_heap_mb: int
    max_payload_kb: int
    host_agent_heap_mb: int
    quick_jit: bool = False  # the agents, Kafka and Cassandra with C1 only (defaults.toml)
    sandbox_backend: str = "docker"
    sandbox_cpus: float = 1.0
    sandbox_pids_limit: int = 512
    sandbox_tmp_size_mb: int = 64
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    host_count: int = 1  # [cluster] hosts
    replicated: bool = False  # [cluster] replicated: a broker and a node on every host
    subnet: str = ""  # [cluster] subnet; "" = derived from the state dir
    otlp_endpoint: str = ""  # [tracing] otlp_endpoint; "" = spans are not exported
    execution_retention_days: int = 30  # [executions] retention_days
    frontend_ui_dir: str = ""  # [frontend] ui_dir; "" = <home>/frontend/ui/dist
    admission: Admission = Admission()  # [admission]

    @property
    def ui_dir(self) -> Path:
        """The built web GUI the frontends serve at /ui/."""
        if not self.frontend_ui_dir:
            return self.home / "frontend" / "ui" / "dist"
        return Path(self.frontend_ui_dir).expanduser().resolve()

    @property
    def bridge(self) -> Bridge | None:
        """The bridge joining the hosts' namespaces; None for a single host (no namespaces)."""
        return None if self.host_count == 1 else bridge_for(self.state_dir, self.subnet)

    @property
    def host_plans(self) -> tuple[HostPlan, ...]:
        """Every host of the cluster, in start order."""
        return plan_hosts(self.state_dir, self.host_id, self.host_count, self.bridge)

    @property
    def service_ip(self) -> str:
        """Where the shared services hosts talk to (Kafka, Cassandra) listen."""
        bridge = self.bridge
        return LOOPBACK if bridge is None else bridge.ip

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def docker_exec_root(self) -> Path:
        """The managed dockerd's exec root (its pid file, sockets, network namespaces)."""
        return self.run_dir / "docker-exec"

    @property
    def redis_password(self) -> str:
        """The password of Redis's default user, made once per state dir (file mode 0600).

        Only SAND's own services know it; application sandboxes get an ACL user of their
        own that reaches nothing of another application."""
        return _secret(self.state_dir / "conf" / "redis.secret")

    @property
    def internal_secret(self) -> str:
        """What SAND's own callers of a host agent send as ``X-Sand-Internal`` (the
        frontends, `sand up`'s bootstrap, `sand status`), made once per state dir (file
        mode 0600). A request with it and no ``X-Sand-User`` acts as the system (admin)."""
        return _secret(self.state_dir / contracts.FILE_INTERNAL_SECRET)

    @property
    def admin_token_file(self) -> Path:
        """The bootstrap admin's API token, written by `sand up` (mode 0600)."""
        return self.state_dir / contracts.FILE_ADMIN_TOKEN

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def conf_dir(self) -> Path:
        return self.state_dir / "conf"

    @property
    def data_dir(self) -> Path:
        return self.state_dir / "data"

    @property
    def redis_socket(self) -> Path:
        """The first host's Redis socket (the only one on a single host)."""
        return self.host_plans[0].redis_socket

    @property
    def docker_url(self) -> str:
        """The Docker Engine address the host agent and `sand` talk to."""
        if self.docker_mode == "managed":
            return f"unix://{self.run_dir / 'docker.sock'}"
        return self.docker_host

    @property
    def replication_factor(self) -> int:
        """Replicas of each topic partition and keyspace row: 3 when replicated, else 1."""
        return REPLICAS if self.replicated else 1

    @property
    def kafka_bootstrap(self) -> str:
        """Every broker, ``ip:port`` joined by commas (one unless replicated)."""
        return ",".join(f"{ip}:{self.ports.kafka}" for ip in self.store_ips)

    @property
    def cassandra_contact_point(self) -> str:
        """The first Cassandra node (a host's agent starts from its own: ``contact_point_of``)."""
        return self.contact_point_of(self.host_plans[0])

    def contact_point_of(self, plan: HostPlan) -> str:
        """The Cassandra node ``plan``'s agent discovers the cluster from: its host's own
        when replicated (the driver finds the others), else the one node."""
        ip = plan.ip if self.replicated else self.service_ip
        return f"{ip}:{self.ports.cassandra_cql}"

    @property
    def store_ips(self) -> tuple[str, ...]:
        """Where Kafka's brokers and Cassandra's nodes listen: the hosts' own addresses when
        replicated (each host runs one of each), else the one shared address."""
        if self.replicated:
            return tuple(plan.ip for plan in self.host_plans)
        return (self.service_ip,)

    @property
    def gateway_url(self) -> str:
        """The HTTP entry point of the cluster (nginx)."""
        return f"http://127.0.0.1:{self.ports.nginx}"


def _secret(path: Path) -> str:
    """The secret in ``path``, made (random, mode 0600) if the file does not exist yet."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # made by another process since: read theirs
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(24))
    return path.read_text().strip()


_CHECKOUT_MARKERS = ("deploy/setup.sh", "sdk-python/pyproject.toml")


def is_checkout(path: Path) -> bool:
    """Whether ``path`` is a SAND checkout (what ``sand up`` runs its services from)."""
    return all((path / marker).is_file() for marker in _CHECKOUT_MARKERS)


def default_home() -> Path:
    """The SAND checkout the cluster runs from: ``$SAND_HOME``; else the checkout this package
    lies in (an editable install); else the working directory, when it is one. Without any,
    the working directory: ``sand up``'s prerequisite check then names what is missing, and
    commands that only talk to a gateway (``--url``) never look."""
    env = os.environ.get("SAND_HOME")
    if env:
        return Path(env).resolve()
    for parent in Path(__file__).resolve().parents:
        if is_checkout(parent):
            return parent
    return Path.cwd().resolve()


def load_config(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> ClusterConfig:
    """Resolve every layer into a validated ``ClusterConfig``.

    Raises ``ConfigError`` naming the file, section and key of a bad value.
    """
    env = os.environ if env is None else env
    layers: dict[str, dict[str, Any]] = _read_toml(_DEFAULTS)
    config_file = config_file or (Path(env["SAND_CONFIG"]) if env.get("SAND_CONFIG") else None)
    if config_file is not None:
        _merge(layers, _read_toml(config_file), str(config_file))
    _merge(layers, _env_layer(env, layers), "environment")
    if overrides:
        _merge(layers, {k: dict(v) for k, v in overrides.items()}, "overrides")
    return _build(layers)


def _read_toml(path: Path) -> dict[str, dict[str, Any]]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: {exc}") from exc


def _merge(base: dict[str, dict[str, Any]], layer: Mapping[str, Any], origin: str) -> None:
    for section, values in layer.items():
        if section not in base or not isinstance(values, Mapping):
            raise ConfigError(f"{origin}: unknown section [{section}]")
        for key, value in values.items():
            if key not in base[section]:
                raise ConfigError(f"{origin}: unknown key {section}.{key}")
            base[section][key] = value


def _env_layer(env: Mapping[str, str], known: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    layer: dict[str, dict[str, Any]] = {}
    if "SAND_STATE_DIR" in env:
        layer.setdefault("cluster", {})["state_dir"] = env["SAND_STATE_DIR"]
    for section, keys in known.items():
        for key, default in keys.items():
            name = f"SAND_{section}_{key}".upper()
            if name in env:
                layer.setdefault(section, {})[key] = _parse_env(name, env[name], default)
    return layer


def _flag(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def _parse_env(name: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, list):
            return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise ConfigError(f"environment {name}={raw!r}: expected {type(default).__name__}") from exc
    return raw


def _build(raw: Mapping[str, Mapping[str, Any]]) -> ClusterConfig:
    sb = raw["sandbox"]
    if sb["backend"] not in _BACKENDS:
        raise ConfigError(
            f"sandbox.backend must be one of {', '.join(_BACKENDS)}, got {sb['backend']!r}"
        )
    c, r, k, cas, d, f, h, n = (
        raw["cluster"],
        raw["redis"],
        raw["kafka"],
        raw["cassandra"],
        raw["docker"],
        raw["frontend"],
        raw["host_agent"],
        raw["nginx"],
    )
    frontends = tuple(_port(f"frontend.ports[{i}]", p) for i, p in enumerate(f["ports"]))
    if not frontends:
        raise ConfigError("frontend.ports must list at least one port, got []")
    ports = Ports(
        kafka=_port("kafka.port", k["port"]),
        kafka_controller=_port("kafka.controller_port", k["controller_port"]),
        cassandra_cql=_port("cassandra.cql_port", cas["cql_port"]),
        cassandra_storage=_port("cassandra.storage_port", cas["storage_port"]),
        cassandra_jmx=_port("cassandra.jmx_port", cas["jmx_port"]),
        frontends=frontends,
        host_agent=_port("host_agent.port", h["port"]),
        nginx=_port("nginx.port", n["port"]),
    )
    named = ports.named()
    if len(set(named.values())) != len(named):
        seen: dict[int, str] = {}
        for owner, port in named.items():
            if port in seen:
                raise ConfigError(f"port {port} is given to both {seen[port]} and {owner}")
            seen[port] = owner
    if d["mode"] not in _DOCKER_MODES:
        raise ConfigError(
            f"docker.mode must be one of {', '.join(_DOCKER_MODES)}, got {d['mode']!r}"
        )
    if d["mode"] == "external" and not d["host"]:
        raise ConfigError("docker.host must be set when docker.mode is 'external'")
    return ClusterConfig(
        home=default_home(),
        state_dir=Path(str(c["state_dir"])).expanduser().resolve(),
        host_id=_name("cluster.host_id", c["host_id"]),
        ready_timeout_s=_positive("cluster.ready_timeout_s", c["ready_timeout_s"]),
        stop_timeout_s=_positive("cluster.stop_timeout_s", c["stop_timeout_s"]),
        quick_jit=_flag("cluster.quick_jit", c["quick_jit"]),
        ports=ports,
        redis_maxmemory_mb=int(_positive("redis.maxmemory_mb", r["maxmemory_mb"])),
        kafka_heap_mb=int(_positive("kafka.heap_mb", k["heap_mb"])),
        kafka_partitions=int(_positive("kafka.partitions", k["partitions"])),
        cassandra_heap_mb=int(_positive("cassandra.heap_mb", cas["heap_mb"])),
        docker_mode=d["mode"],
        docker_host=d["host"],
        base_image=d["base_image"],
        frontend_heap_mb=int(_positive("frontend.heap_mb", f["heap_mb"])),
        max_payload_kb=_whole("frontend.max_payload_kb", f["max_payload_kb"], 1, MAX_PAYLOAD_KB),
        host_agent_heap_mb=int(_positive("host_agent.heap_mb", h["heap_mb"])),
        sandbox_backend=sb["backend"],
        sandbox_cpus=_positive("sandbox.cpus", sb["cpus"]),
        sandbox_pids_limit=int(_positive("sandbox.pids_limit", sb["pids_limit"])),
        sandbox_tmp_size_mb=int(_positive("sandbox.tmp_size_mb", sb["tmp_size_mb"])),
        sandbox_limits=_sandbox_limits(sb),
        host_count=_host_count(c["hosts"]),
        replicated=_replicated(c["replicated"], c["hosts"]),
        subnet=_subnet(c["subnet"]),
        otlp_endpoint=_otlp_endpoint(raw["tracing"]["otlp_endpoint"]),
        execution_retention_days=_retention_days(raw["executions"]["retention_days"]),
        frontend_ui_dir=_text("frontend.ui_dir", f["ui_dir"]),
        admission=_admission(raw["admission"]),
    )


def _admission(section: Mapping[str, Any]) -> Admission:
    per_app = _whole("admission.max_queued_per_app", section["max_queued_per_app"], 1, MAX_QUEUED)
    per_host = _whole(
        "admission.max_queued_per_host", section["max_queued_per_host"], per_app, MAX_QUEUED
    )
    retry = _whole("admission.retry_after_s", section["retry_after_s"], 1, MAX_RETRY_AFTER_S)
    return Admission(
        max_queued_per_app=per_app,
        max_queued_per_host=per_host,
        retry_after_s=retry,
        adaptive=_flag("admission.adaptive", section["adaptive"]),
    )


def _whole(key: str, value: Any, low: int, high: int | None = None, rule: str = "") -> int:
    """``value`` of config ``key`` as a whole number in [low, high]; ``rule`` says why, if not
    the plain bounds."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"{key} must be a whole number {rule or bounds}, got {value!r}")
    return value


def _sandbox_limits(sb: Mapping[str, Any]) -> SandboxLimits:
    def whole(key: str, low: int, high: int | None = None, rule: str = "") -> int:
        return _whole(f"sandbox.{key}", sb[key], low, high, rule)

    weight = whole("cpu_weight", MIN_CPU_WEIGHT, MAX_CPU_WEIGHT)
    memory = whole("memory_mb", 1)
    max_memory = whole("max_memory_mb", memory, rule=f"at least sandbox.memory_mb ({memory})")
    return SandboxLimits(
        cpu_weight=weight,
        max_cpu_weight=whole(
            "max_cpu_weight",
            weight,
            MAX_CPU_WEIGHT,
            rule=f"from sandbox.cpu_weight ({weight}) to {MAX_CPU_WEIGHT}",
        ),
        memory_mb=memory,
        max_memory_mb=max_memory,
        max_sandbox_memory_mb=whole(
            "max_sandbox_memory_mb",
            max_memory,
            rule=f"at least sandbox.max_memory_mb ({max_memory})",
        ),
    )


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r}")
    return value


def _otlp_endpoint(value: Any) -> str:
    if value == "":
        return ""
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            "tracing.otlp_endpoint must be an http(s) URL like "
            f'"http://127.0.0.1:4318/v1/traces" or "", got {value!r}'
        )
    return str(value)


def _retention_days(value: Any) -> int:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not 1 <= value <= MAX_RETENTION_DAYS
    ):
        raise ConfigError(
            "executions.retention_days must be a whole number of days from 1 to "
            f"{MAX_RETENTION_DAYS}, got {value!r}"
        )
    return value


def _host_count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_HOSTS:
        raise ConfigError(
            f"cluster.hosts must be a whole number from 1 to {MAX_HOSTS}, got {value!r}"
        )
    return value


def _replicated(value: Any, hosts: Any) -> bool:
    replicated = _flag("cluster.replicated", value)
    if replicated and isinstance(hosts, int) and hosts < REPLICAS:
        raise ConfigError(
            f"cluster.replicated = true needs cluster.hosts of at least {REPLICAS} (each host "
            f"runs one of the {REPLICAS} replicas, a majority of which must survive a host), "
            f"got hosts = {hosts}"
        )
    return replicated


def _subnet(value: Any) -> str:
    if value == "":
        return ""
    match = _SUBNET.fullmatch(value) if isinstance(value, str) else None
    if match is None or any(int(octet) > 255 for octet in match.groups()):
        raise ConfigError(f'cluster.subnet must be a /24 like "10.213.7.0/24" or "", got {value!r}')
    return str(value)


def _port(key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1024 <= value <= 65535:
        raise ConfigError(f"{key} must be a port number from 1024 to 65535, got {value!r}")
    return value


def _positive(key: str, value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{key} must be a number > 0, got {value!r}")
    return float(value)


def _name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value or not value.replace("-", "").isalnum():
        raise ConfigError(f"{key} must be letters, digits and '-', got {value!r}")
    return value

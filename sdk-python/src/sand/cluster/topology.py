"""Where the hosts of a cluster live on one machine: names, addresses, directories.

One host (the default) runs in the root network namespace with the state dir's own
paths, exactly as before several hosts existed. With several, host ``host-<i>`` gets a
network namespace, a veth pair into a bridge shared with Kafka and Cassandra, the
address ``<prefix>.<10+i>`` and a directory ``STATE/hosts/host-<i>/``. Every kernel
name is derived from the state dir, so clusters with different state dirs do not
clash. Pure: nothing here touches the system (``network`` does).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sand import contracts

MAX_HOSTS = contracts.CONFIG_MAX_HOSTS
LOOPBACK = "127.0.0.1"
# Addresses of derived bridges: 10.213.X.0/24, X from the state dir's hash.
_DERIVED_PREFIX = "10.213"
# The kernel limits interface names to 15 characters (IFNAMSIZ - 1).
IFNAME_MAX = 15


def state_tag(state_dir: Path) -> str:
    """Six hex digits naming a state dir in kernel objects (bridge, namespaces, veths)."""
    return _digest(state_dir)[:6]


def _digest(state_dir: Path) -> str:
    return hashlib.sha256(str(state_dir).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Bridge:
    """The Linux bridge joining the hosts' namespaces to the root namespace."""

    name: str
    prefix: str  # the first three octets of its /24, like "10.213.7"

    @property
    def ip(self) -> str:
        """The bridge's own address: where Kafka and Cassandra listen; the hosts' gateway."""
        return f"{self.prefix}.1"

    @property
    def subnet(self) -> str:
        return f"{self.prefix}.0/24"


def bridge_for(state_dir: Path, subnet: str = "") -> Bridge:
    """The bridge of a state dir; ``subnet`` ("A.B.C.0/24", validated by the config) or
    one derived from the state dir."""
    if subnet:
        prefix = subnet.split("/")[0].rsplit(".", 1)[0]
    else:
        prefix = f"{_DERIVED_PREFIX}.{int(_digest(state_dir)[6:8], 16)}"
    return Bridge(name=f"sandbr-{state_tag(state_dir)}", prefix=prefix)


@dataclass(frozen=True, slots=True)
class HostPlan:
    """One SAND host of this machine: its id, directory and network place."""

    id: str
    index: int  # 1-based
    state_dir: Path  # the host's own state: STATE itself for a single host
    ip: str  # where its agent listens; LOOPBACK for a single host
    netns: str | None = None  # None: the root namespace
    veth: str | None = None  # the pair's end in the bridge (root namespace)
    peer: str | None = None  # the pair's end inside ``netns``

    @property
    def conf_dir(self) -> Path:
        return self.state_dir / "conf"

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def data_dir(self) -> Path:
        return self.state_dir / "data"

    @property
    def pids_dir(self) -> Path:
        return self.run_dir / "pids"

    @property
    def redis_socket(self) -> Path:
        # In a directory of its own: sandboxes get this directory mounted, and
        # must not see anything else of run/ (the Docker socket is there).
        return self.run_dir / "redis" / "redis.sock"

    def agent_url(self, port: int) -> str:
        return f"http://{self.ip}:{port}"


def plan_hosts(
    state_dir: Path, host_id: str, count: int, bridge: Bridge | None
) -> tuple[HostPlan, ...]:
    """The hosts of a cluster in start order. One host keeps ``host_id`` and the state
    dir's own paths; several are ``host-1`` .. ``host-<count>`` and need ``bridge``."""
    if count == 1:
        return (HostPlan(id=host_id, index=1, state_dir=state_dir, ip=LOOPBACK),)
    if bridge is None:
        raise ValueError(f"{count} hosts need a bridge")
    tag = state_tag(state_dir)
    plans = []
    for index in range(1, count + 1):
        host = f"host-{index}"
        plans.append(
            HostPlan(
                id=host,
                index=index,
                state_dir=state_dir / "hosts" / host,
                ip=f"{bridge.prefix}.{10 + index}",
                netns=f"sand-{tag}-{host}",
                veth=f"sv{tag}-{index}",
                peer=f"sp{tag}-{index}",
            )
        )
    return tuple(plans)

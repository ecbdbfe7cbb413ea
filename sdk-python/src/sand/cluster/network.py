"""The network of several hosts on one machine: a bridge, and per host a network
namespace joined to it by a veth pair.

Runs ``ip`` (iproute2) and so needs root. Both directions are idempotent: ``ensure``
completes a half-built network, ``remove`` skips what is already gone. Blocking;
each ``ip`` call is bounded by a timeout.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from sand.cluster.topology import Bridge, HostPlan

_NETNS_DIR = Path("/run/netns")
_TIMEOUT_S = 10


class NetworkError(Exception):
    """An ``ip`` command failed or the subnet is taken; the message names the command."""


def ensure(bridge: Bridge, plans: Iterable[HostPlan]) -> None:
    """Create whatever of the bridge and the hosts' namespaces is missing.

    Raises ``NetworkError`` naming the failed command, or the interface that already
    holds an address of the bridge's subnet."""
    _check_subnet_free(bridge)
    if not link_exists(bridge.name):
        _ip("link", "add", "name", bridge.name, "type", "bridge")
    _ip("addr", "replace", f"{bridge.ip}/24", "dev", bridge.name)
    _ip("link", "set", bridge.name, "up")
    for plan in plans:
        if plan.netns is None or plan.veth is None or plan.peer is None:
            continue
        if not netns_exists(plan.netns):
            _ip("netns", "add", plan.netns)
        if not link_exists(plan.veth):
            # the two ends live and die together: no end of an old pair can be left over
            _ip("link", "add", plan.veth, "type", "veth", "peer", "name", plan.peer)
            _ip("link", "set", plan.peer, "netns", plan.netns)
        _ip("link", "set", plan.veth, "master", bridge.name, "up")
        _ip("-n", plan.netns, "addr", "replace", f"{plan.ip}/24", "dev", plan.peer)
        _ip("-n", plan.netns, "link", "set", plan.peer, "up")
        _ip("-n", plan.netns, "link", "set", "lo", "up")
        _ip("-n", plan.netns, "route", "replace", "default", "via", bridge.ip)


def remove(bridge: Bridge, plans: Iterable[HostPlan]) -> list[str]:
    """Delete the hosts' namespaces, their veth pairs and the bridge; returns what it deleted.

    Goes on past a failed step and raises ``NetworkError`` naming every piece left. A
    namespace still holding processes disappears from the list at once but lives on
    until they exit: kill them first (``netns_pids``)."""
    removed, problems = [], []

    def delete(kind: str, name: str, exists: Callable[[str], bool]) -> None:
        if not exists(name):
            return
        result = _ip(*(("netns", "del") if kind == "netns" else ("link", "del")), name, check=False)
        # the kernel tears a namespace down in the background: its veth may vanish meanwhile
        if result.returncode == 0 or not exists(name):
            removed.append(f"{kind} {name}")
        else:
            problems.append(f"{kind} {name}: {result.stderr.strip()}")

    for plan in plans:
        if plan.netns is not None:
            delete("netns", plan.netns, netns_exists)
        if plan.veth is not None:
            delete("veth", plan.veth, link_exists)
    delete("bridge", bridge.name, link_exists)
    if problems:
        raise NetworkError("could not remove " + "; ".join(problems))
    return removed


def netns_exists(name: str) -> bool:
    return (_NETNS_DIR / name).exists()


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def netns_pids(name: str) -> list[int]:
    """Every process in the namespace ``name`` (none when it does not exist)."""
    if not netns_exists(name):
        return []
    out = _ip("netns", "pids", name, check=False).stdout
    return [int(word) for word in out.split() if word.isdigit()]


def _check_subnet_free(bridge: Bridge) -> None:
    subnet = ipaddress.ip_network(bridge.subnet)
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        # "3: eth0    inet 192.0.2.2/24 brd ... scope global eth0"
        words = line.split()
        if len(words) < 4 or words[2] != "inet":
            continue
        device, address = words[1], ipaddress.ip_interface(words[3])
        if device != bridge.name and address.network.overlaps(subnet):
            raise NetworkError(
                f"subnet {bridge.subnet} of bridge {bridge.name} overlaps {address} of {device}; "
                f'set [cluster] subnet to a free /24, like subnet = "10.213.99.0/24"'
            )


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = ("ip", *args)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetworkError(f"`{' '.join(command)}` failed: {exc}") from exc
    if check and result.returncode != 0:
        raise NetworkError(
            f"`{' '.join(command)}` failed (status {result.returncode}): {result.stderr.strip()}"
        )
    return result

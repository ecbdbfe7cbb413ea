"""Where a test run's CPU goes (issue 27): each test cluster, just before it stops, records the
CPU its parts used — its Kafka, Cassandra, agents, frontends, Redis, nginx and dockerd by
process, its sandboxes by their cgroups (which count every grain worker they ever held) — and
the run ends with one table of them beside the machine's own busy and idle seconds.

`make test`'s time is bounded by CPU, not by waiting (decision 0037): a cut is worth what it
takes out of this table. Processes that died before their cluster stopped (a host killed by a
fault scenario, a cluster restarted whole, a sandbox undeployed) are not in it; the machine's
line counts everything, the tests' own processes too.

The pytest controller names one log per run (``SAND_TEST_CPU_LOG``, inherited by the xdist
workers, which append a JSON line per cluster); its terminal summary prints and removes it.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil
from sand.cluster import leftovers

LOG_ENV = "SAND_TEST_CPU_LOG"

# The first name found in a process's command line names its part.
_PARTS = (
    ("kafka.Kafka", "kafka"),
    ("CassandraDaemon", "cassandra"),
    ("host-agent", "host-agent"),
    ("frontend", "frontend"),
    ("redis-server", "redis"),
    ("nginx", "nginx"),
    ("dockerd", "dockerd"),
    ("containerd", "dockerd"),
)
SANDBOXES = "sandboxes"
OTHER = "other"


def part_of(cmdline: str) -> str:
    """The part of a cluster a command line runs (``other`` for none of them)."""
    return next((part for needle, part in _PARTS if needle in cmdline), OTHER)


@dataclass(frozen=True, slots=True)
class MachineCpu:
    """The machine's CPU seconds so far, from ``/proc/stat``: busy (all but idle and iowait)
    and idle."""

    busy_s: float
    idle_s: float

    @staticmethod
    def now(stat: str | None = None) -> MachineCpu:
        line = (stat if stat is not None else Path("/proc/stat").read_text()).splitlines()[0]
        ticks = [int(v) for v in line.split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        idle = ticks[3] + ticks[4]
        return MachineCpu(busy_s=(sum(ticks) - idle) / hz, idle_s=idle / hz)

    def since(self, earlier: MachineCpu) -> MachineCpu:
        return MachineCpu(self.busy_s - earlier.busy_s, self.idle_s - earlier.idle_s)


def cluster_cpu(processes: Iterable[psutil.Process], cgroups: Iterable[Path]) -> dict[str, float]:
    """CPU seconds by part: each live process of a cluster outside its sandboxes, and each
    sandbox cgroup's ``cpu.stat`` (cgroup v2; its processes are then not counted again)."""
    by_part: dict[str, float] = defaultdict(float)
    cgroups = list(cgroups)
    for cgroup in cgroups:
        try:  # cgroup v2's usage counts the cgroups below it too
            stat = dict(line.split() for line in (cgroup / "cpu.stat").read_text().splitlines())
        except (OSError, ValueError):
            continue
        by_part[SANDBOXES] += int(stat.get("usage_usec", 0)) / 1e6
    in_sandboxes = leftovers.cgroup_pids(cgroups)
    for process in processes:
        if process.pid in in_sandboxes:
            continue
        try:
            times = process.cpu_times()
            part = part_of(" ".join(process.cmdline()))
        except psutil.Error:
            continue
        by_part[part] += times.user + times.system
    return dict(by_part)


def record(state_dir: Path, host_state_dirs: Iterable[Path]) -> None:
    """Appends the CPU by part of the cluster of ``state_dir`` (and its hosts' dirs) to the
    run's log, named by the dir; nothing when no run names a log."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    hosts = list(host_state_dirs)
    parts = cluster_cpu(leftovers.processes_of(state_dir, hosts), leftovers.sandbox_cgroups(hosts))
    line = json.dumps({"cluster": state_dir.name, "parts": parts})
    with open(log, "a") as out:  # one short write per line: the workers' lines do not interleave
        out.write(line + "\n")


def read(log: Path) -> list[tuple[str, dict[str, float]]]:
    """The clusters a run recorded, in the order they stopped."""
    if not log.exists():
        return []
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [(r["cluster"], {k: float(v) for k, v in r["parts"].items()}) for r in records]


def table(
    records: list[tuple[str, dict[str, float]]], machine: MachineCpu, wall_s: float
) -> list[str]:
    """The summary's lines: the machine's busy and idle seconds, then CPU seconds by part (the
    columns, largest first) for each cluster and in all."""
    cores = psutil.cpu_count() or 1
    lines = [
        f"machine: {machine.busy_s:.0f} CPU-s busy, {machine.idle_s:.0f} idle over {wall_s:.0f} s"
        f" ({machine.busy_s / max(wall_s * cores, 1e-9):.0%} of {cores} cores)"
    ]
    if not records:
        return lines
    totals: Mapping[str, float] = _sum(parts for _, parts in records)
    columns = sorted(totals, key=lambda part: -totals[part])
    width = max(len("in all"), *(len(name) for name, _ in records))
    header = " ".join(f"{c:>10}" for c in columns)
    lines.append(f"{'cluster':<{width}} {header} {'total':>8}")
    for name, parts in [*records, ("in all", dict(totals))]:
        cells = " ".join(f"{parts.get(c, 0.0):>10.1f}" for c in columns)
        lines.append(f"{name:<{width}} {cells} {sum(parts.values()):>8.1f}")
    return lines


def _sum(all_parts: Iterable[Mapping[str, float]]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for parts in all_parts:
        for part, seconds in parts.items():
            totals[part] += seconds
    return dict(totals)

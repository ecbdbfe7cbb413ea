"""Where a test run's CPU goes (issue 27): while the run lasts, a thread of the pytest
controller looks at every process of the machine every 2 s and adds the CPU each used since
the last look to its part — Kafka, Cassandra, the agents, the frontends, grain workers, the
pytest processes, Maven, the browser... — and the run ends with the table of them beside the
machine's own busy and idle seconds.

`make test`'s time is bounded by CPU, not by waiting (decision 0037): a cut is worth what it
takes out of this table. It is machine-wide: under `make test` the first integration phase's
table also holds the linters, JUnit and unit tests that run beside it. What a process used in
its last 2 s, and processes shorter than that (a grain's fork per event, a CLI call, a
compiler), are the ``unseen`` row: busy less the rest.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import psutil

# The first needle found in a process's command line names its part: the specific ones first
# (every JVM's command line holds "java", a grain worker's "python").
_PARTS = (
    ("kafka.Kafka", "kafka"),
    ("CassandraDaemon", "cassandra"),
    ("/host-agent", "host-agent"),
    ("/frontend-", "frontend"),
    ("/frontend.jar", "frontend"),
    ("surefire", "junit"),
    ("plexus-classworlds", "maven"),
    ("sand_worker", "grain-workers"),
    ("redis-server", "redis"),
    ("nginx", "nginx"),
    ("dockerd", "docker"),
    ("containerd", "docker"),
    ("chrom", "browser"),
    ("pytest", "pytest"),
    ("exec(eval(sys.stdin", "pytest"),  # an xdist worker, as execnet starts it
    ("mypy", "linters"),
    ("ruff", "linters"),
    ("node", "node"),
    ("npm", "node"),
    ("java", "java, other"),
    ("python", "python, other"),
)
REPORT_ENV = "SAND_TEST_CPU_REPORT"
OTHER = "other"
UNSEEN = "unseen"
INTERVAL_S = 2.0


def part_of(cmdline: str) -> str:
    """The part a command line runs (``other`` for none of them: kernel threads, tools)."""
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


@dataclass(frozen=True, slots=True)
class CpuUse:
    """A run's CPU: the machine's, over ``wall_s``, and the seconds each part was seen using."""

    machine: MachineCpu
    wall_s: float
    parts: dict[str, float]


# a process: its pid and start time (a pid may be reused), its part and CPU seconds so far
_Seen = dict[tuple[int, int], tuple[str, float]]


def _look(proc: Path, before: _Seen, hz: int) -> tuple[_Seen, dict[str, float]]:
    """Every process under ``proc`` now, and what each used since ``before`` (all of it
    for a process new since then) by part."""
    now: _Seen = {}
    used: dict[str, float] = defaultdict(float)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            # utime and stime: not what its reaped children used, which a service's
            # supervisor would count again when it reaps a Kafka that was seen alive
            cpu = (int(fields[11]) + int(fields[12])) / hz
            key = (int(entry.name), int(fields[19]))
            if key in before:
                part, earlier = before[key]
            else:
                cmdline = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
                part, earlier = part_of(cmdline or stat[stat.find("(") + 1 : stat.rfind(")")]), 0.0
        except (OSError, ValueError, IndexError):
            continue  # ended while we looked
        now[key] = (part, cpu)
        if cpu > earlier:
            used[part] += cpu - earlier
    return now, used


class CpuSampler:
    """Samples from ``start`` to ``stop`` on a thread of its own (a daemon: a run that ends
    without ``stop`` leaves nothing behind)."""

    def __init__(self, proc: Path = Path("/proc"), interval_s: float = INTERVAL_S) -> None:
        self._proc, self._interval_s = proc, interval_s
        self._hz = os.sysconf("SC_CLK_TCK")
        self._parts: dict[str, float] = defaultdict(float)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        # what ran before the start is not the run's: the first look only sets the baseline
        self._seen, _ = _look(self._proc, {}, self._hz)
        self._started = (time.monotonic(), MachineCpu.now())

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            self._sample()

    def _sample(self) -> None:
        self._seen, used = _look(self._proc, self._seen, self._hz)
        for part, seconds in used.items():
            self._parts[part] += seconds

    def stop(self) -> CpuUse:
        self._stopped.set()
        self._thread.join()
        self._sample()
        began, machine = self._started
        use = MachineCpu.now().since(machine)
        parts = dict(self._parts)
        parts[UNSEEN] = max(0.0, use.busy_s - sum(parts.values()))
        return CpuUse(machine=use, wall_s=time.monotonic() - began, parts=parts)


def table(use: CpuUse, cores: int | None = None) -> list[str]:
    """The summary's lines: the machine's busy and idle seconds, then each part's CPU seconds
    and share of the busy ones, largest first (parts under 1 s left out)."""
    cores = cores or psutil.cpu_count() or 1
    busy = max(use.machine.busy_s, 1e-9)
    lines = [
        f"machine: {use.machine.busy_s:.0f} CPU-s busy, {use.machine.idle_s:.0f} idle over"
        f" {use.wall_s:.0f} s ({use.machine.busy_s / max(use.wall_s * cores, 1e-9):.0%} of"
        f" {cores} cores)"
    ]
    width = max(len(part) for part in use.parts) if use.parts else 0
    for part, seconds in sorted(use.parts.items(), key=lambda item: -item[1]):
        if seconds >= 1.0:
            lines.append(f"  {part:<{width}} {seconds:8.1f} s {seconds / busy:5.0%}")
    return lines

"""The benchmark's CPU table counts the stack being measured, not processes that merely
share a name with its parts, and judges each part against its budget."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

from bench.stack_cpu import OTHER, PARTS, StackCpu, budget_rows, part_of

_BURN = (
    "import time\n"
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end: pass\n"
    "time.sleep(60)"
)


def test_partOf_byCommandLine_sandboxFirst() -> None:
    assert part_of("java -cp x dev.sand.agent.Main --state /s", False) == "host agent"
    assert part_of("/usr/bin/redis-server /s/conf/redis.conf", False) == "redis"
    assert part_of("java org.apache.cassandra.service.CassandraDaemon", False) == "cassandra"
    assert part_of("python3 grain.py", True) == PARTS[0].name  # inside a sandbox cgroup
    assert part_of("unshare --fork /s/bin/thing", False) == OTHER


def test_seconds_countsOnlyTheStacksProcesses(tmp_path: Path) -> None:
    """Two CPU burners named redis-server by their command line: only the one whose command
    line names this stack's state dir is counted, under "redis"."""
    state = tmp_path / "stack"
    state.mkdir()
    ours = subprocess.Popen([sys.executable, "-c", _BURN, "redis-server", str(state)])
    theirs = subprocess.Popen([sys.executable, "-c", _BURN, "redis-server", str(tmp_path / "x")])
    try:
        for process in (ours, theirs):  # both burn their 0.3 s, however busy the machine
            deadline = time.monotonic() + 30
            while sum(psutil.Process(process.pid).cpu_times()[:2]) < 0.29:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        totals = StackCpu(state, [state]).seconds()
        assert 0.25 <= totals["redis"] < 0.6, totals
        assert sum(totals.values()) - totals["dockerd + containerd"] < 0.6, totals
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()


def test_budgetRows_verdictPerPartAndWholeStack() -> None:
    fork = {"host agent": 0.4, "frontends (2)": 1.4, "wall": 12.0}
    rows = {row[0]: row for row in budget_rows(fork, {"host agent": 0.6})}
    assert rows["host agent"][1:4] == ("0.40", "0.50", "within")
    assert rows["host agent"][4:] == ("0.60", "0.50", "over ×1.2")
    assert rows["frontends (2)"][3] == "over ×2.0"
    assert rows["frontends (2)"][4:] == ("n/a", "0.70", "not measured")
    assert rows["whole stack"][1:4] == ("1.80", "5.00", "within")  # wall time is not CPU
    assert "redis" not in rows

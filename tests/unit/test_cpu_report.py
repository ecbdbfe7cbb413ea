"""The CPU table a test run ends with (tests/cpu_report.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests import cpu_report

BUSY = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


@pytest.mark.parametrize(
    ("cmdline", "part"),
    [
        ("java -Xmx512m -cp lib/* kafka.Kafka conf/kafka.properties", "kafka"),
        ("java -cp x org.apache.cassandra.service.CassandraDaemon", "cassandra"),
        ("java -jar /s/lib/host-agent-17.jar --config c.json", "host-agent"),
        ("java -jar /s/lib/frontend-17.jar --port 28081", "frontend"),
        ("/usr/bin/redis-server /s/conf/redis.conf", "redis"),
        ("nginx: worker process", "nginx"),
        ("/usr/bin/dockerd --data-root /s/data/docker", "dockerd"),
        ("python3 -m sand.cli status", "other"),
    ],
)
def test_partOf_namesThePartACommandLineRuns(cmdline: str, part: str) -> None:
    assert cpu_report.part_of(cmdline) == part


def test_machineCpu_busyIsAllButIdleAndIowait() -> None:
    hz = os.sysconf("SC_CLK_TCK")
    stat = f"cpu  {hz} 0 {hz // 2} {8 * hz} {hz // 2} 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    cpu = cpu_report.MachineCpu.now(stat)
    assert cpu == cpu_report.MachineCpu(busy_s=1.5, idle_s=8.5)
    assert cpu.since(cpu_report.MachineCpu(1.0, 8.0)) == cpu_report.MachineCpu(0.5, 0.5)


def test_clusterCpu_countsALiveProcessByItsPart() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY + "time.sleep(30)\n"])
    try:
        process = psutil.Process(child.pid)
        while process.cpu_times().user + process.cpu_times().system < 0.25:
            pass
        parts = cpu_report.cluster_cpu([process], cgroups=[])
    finally:
        child.kill()
        child.wait()
    assert set(parts) == {"other"} and 0.25 <= parts["other"] < 5


def test_clusterCpu_aSandboxCgroupsUsage_countedOnceUnderSandboxes(tmp_path: Path) -> None:
    cgroup = tmp_path / "sand-abc"
    (cgroup / "app-1").mkdir(parents=True)
    (cgroup / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\n")
    (cgroup / "app-1" / "cgroup.procs").write_text(f"{psutil.Process().pid}\n")
    # this very process sits in the sandbox: its own CPU is in the cgroup's, not again
    parts = cpu_report.cluster_cpu([psutil.Process()], cgroups=[cgroup])
    assert parts == {"sandboxes": 2.5}


def test_recordThenRead_linesOfTheRunInTheOrderTheyStopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "cpu.jsonl"
    monkeypatch.setenv(cpu_report.LOG_ENV, str(log))
    cpu_report.record(tmp_path / "no-cluster-a", [])
    cpu_report.record(tmp_path / "no-cluster-b", [])
    assert cpu_report.read(log) == [("no-cluster-a", {}), ("no-cluster-b", {})]
    monkeypatch.delenv(cpu_report.LOG_ENV)
    cpu_report.record(tmp_path / "unlogged", [])
    assert len(cpu_report.read(log)) == 2


def test_table_columnsLargestFirst_aRowPerClusterAndInAll() -> None:
    records = [
        ("test-state", {"kafka": 10.0, "cassandra": 30.0}),
        ("test-state-gw1", {"cassandra": 20.0, "host-agent": 5.0}),
    ]
    lines = cpu_report.table(records, cpu_report.MachineCpu(120.0, 80.0), wall_s=100.0)
    cores = psutil.cpu_count()
    assert lines[0].startswith("machine: 120 CPU-s busy, 80 idle over 100 s")
    assert lines[0].endswith(f"({120 / (100 * cores):.0%} of {cores} cores)")
    assert lines[1].split() == ["cluster", "cassandra", "kafka", "host-agent", "total"]
    assert lines[2].split() == ["test-state", "30.0", "10.0", "0.0", "40.0"]
    assert lines[3].split() == ["test-state-gw1", "20.0", "0.0", "5.0", "25.0"]
    assert lines[4].split() == ["in", "all", "50.0", "10.0", "5.0", "65.0"]


def test_table_noClusters_onlyTheMachine() -> None:
    lines = cpu_report.table([], cpu_report.MachineCpu(1.0, 1.0), wall_s=1.0)
    assert len(lines) == 1 and lines[0].startswith("machine:")

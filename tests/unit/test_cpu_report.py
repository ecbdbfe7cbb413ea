"""The CPU table an integration run ends with (tests/cpu_report.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cpu_report

# burns 0.4 s of CPU, then sleeps until killed; its command line names no part but python's
BUSY = (
    "import time\nend = time.process_time() + 0.4\n"
    "while time.process_time() < end: pass\ntime.sleep(60)\n"
)


@pytest.mark.parametrize(
    ("cmdline", "part"),
    [
        ("java -Xmx512m -Dsand.state=/s -cp lib/* kafka.Kafka conf/kafka.properties", "kafka"),
        ("java -cp x org.apache.cassandra.service.CassandraDaemon", "cassandra"),
        ("java -Dsand.service=host-1/host-agent -jar /s/lib/host-agent-17.jar", "host-agent"),
        ("java -Dsand.service=frontend-1 -jar /s/lib/frontend-17.jar --port 1", "frontend"),
        ("java -jar target/surefire/surefirebooter1.jar", "junit"),
        ("/usr/bin/redis-server /s/conf/redis.conf", "redis"),
        ("nginx: worker process", "nginx"),
        ("/usr/bin/dockerd --data-root /s/data/docker", "docker"),
        ("/usr/lib/chromium/chromium --headless", "browser"),
        ("python3 /s/sandbox/sand_worker/jail.py", "grain-workers"),
        (".venv/bin/python -c import sys;exec(eval(sys.stdin.readline()))", "pytest"),
        (".venv/bin/pytest -q -n 3 tests", "pytest"),
        (".venv/bin/mypy sdk-python/src", "linters"),
        ("python3 -m sand.cli status", "python, other"),
        ("kworker/0:1", "other"),
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


def _fake_process(proc: Path, pid: int, cmdline: str, cpu_ticks: int, started: int = 7) -> None:
    """A /proc/PID as the sampler reads it: stat with utime and stime (fields 14 and 15, split
    between them) and the start time (22), and cmdline."""
    (proc / str(pid)).mkdir(exist_ok=True)
    after_name = ["S", *["0"] * 10, str(cpu_ticks - cpu_ticks // 2), str(cpu_ticks // 2)]
    after_name += ["0"] * 6 + [str(started)] + ["0"] * 5
    (proc / str(pid) / "stat").write_text(f"{pid} (a (b) c) {' '.join(after_name)}\n")
    (proc / str(pid) / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())


def test_sampler_countsWhatEachProcessUsedDuringTheRun_byItsPart(tmp_path: Path) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    _fake_process(tmp_path, 10, "java -cp x kafka.Kafka", 50 * hz)  # before the run
    _fake_process(tmp_path, 11, "/usr/bin/redis-server", 5 * hz)
    (tmp_path / "self").mkdir()  # not a pid
    sampler = cpu_report.CpuSampler(proc=tmp_path, interval_s=3600)  # looks only when told
    _fake_process(tmp_path, 10, "java -cp x kafka.Kafka", 52 * hz)  # +2 s
    _fake_process(tmp_path, 12, "java org.apache.cassandra.service.CassandraDaemon", 3 * hz)
    sampler._sample()
    shutil.rmtree(tmp_path / "11")  # redis ended, unseen in its last 2 s
    _fake_process(tmp_path, 12, "java org.apache.cassandra.service.CassandraDaemon", 4 * hz)
    # pid 10 reused by a new process: all of its CPU is the run's
    _fake_process(tmp_path, 10, "/usr/bin/redis-server", 1 * hz, started=99)
    use = sampler.start().stop()
    assert {k: v for k, v in use.parts.items() if k != cpu_report.UNSEEN} == {
        "kafka": 2.0,
        "cassandra": 4.0,
        "redis": 1.0,
    }
    assert use.parts[cpu_report.UNSEEN] == max(0.0, use.machine.busy_s - 7.0)


def test_sampler_onThisMachine_seesAProcessItStartedBurnCpu() -> None:
    sampler = cpu_report.CpuSampler(interval_s=0.1).start()
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        _busy_until_sleeping(busy.pid)
        use = sampler.stop()
    finally:
        busy.kill()
        busy.wait()
    assert use.parts["python, other"] >= 0.4
    assert use.machine.busy_s >= 0.4 and use.wall_s > 0
    assert sum(use.parts.values()) >= use.machine.busy_s - 1e-6


def _busy_until_sleeping(pid: int) -> None:
    stat = Path(f"/proc/{pid}/stat")
    while True:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") >= 0.4:
            return


def test_table_machineThenPartsLargestFirst_underASecondLeftOut() -> None:
    use = cpu_report.CpuUse(
        machine=cpu_report.MachineCpu(120.0, 80.0),
        wall_s=100.0,
        parts={"kafka": 30.0, "cassandra": 60.0, "nginx": 0.4, cpu_report.UNSEEN: 29.6},
    )
    lines = cpu_report.table(use, cores=2)
    assert lines[0] == "machine: 120 CPU-s busy, 80 idle over 100 s (60% of 2 cores)"
    assert [line.split() for line in lines[1:]] == [
        ["cassandra", "60.0", "s", "50%"],
        ["kafka", "30.0", "s", "25%"],
        [cpu_report.UNSEEN, "29.6", "s", "25%"],
    ]

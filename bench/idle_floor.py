"""`python -m bench.idle_floor`: what Kafka and Cassandra cost at rest, alone, with no client.

The floor under the idle stack's figure (decision 0031): each service is started by itself
from the spec ``sand up`` uses (``sand.cluster.stores``: the same argv, JVM options and
rendered configuration), in a private state directory on private ports, with nothing talking
to it. Once it printed its ready line it is left to settle (the JIT compiles for minutes
after start), then the CPU of each of its threads is read from ``/proc`` over the span; the
process is killed after. A JVM that only sleeps is measured the same way, for the JVM's own
floor. Prints figures; passes or fails nothing. Run from the repository root, with no stack
of this checkout's private ports up::

    .venv/bin/python -m bench.idle_floor --settle 150 --span 60
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.services import build_services
from sand.cluster.specs import ServiceSpec

# Private ports: the defaults + 20000, clear of `sand up` and of the test suite's (+ 10000).
PORTS: dict[str, dict[str, Any]] = {
    "kafka": {"port": 29292, "controller_port": 29293},
    "cassandra": {"cql_port": 29242, "storage_port": 27200, "jmx_port": 27399},
    "frontend": {"ports": [28281, 28282]},
    "host_agent": {"port": 28290},
    "nginx": {"port": 28280},
}
START_TIMEOUT_S = 240
_TICKS = os.sysconf("SC_CLK_TCK")
_SLEEPER = (
    "public class Sleep { public static void main(String[] a) throws Exception {"
    " Thread.sleep(Long.MAX_VALUE); } }"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("services", nargs="*", default=["jvm", "kafka", "cassandra"])
    parser.add_argument("--settle", type=float, default=150, help="seconds after ready")
    parser.add_argument("--span", type=float, default=60, help="seconds measured")
    args = parser.parse_args(argv)
    state = Path(tempfile.mkdtemp(prefix="sand-idle-floor-"))
    try:
        config = load_config(
            env={}, overrides={**PORTS, "cluster": {"state_dir": str(state / "state")}}
        )
        specs = {spec.name: spec for spec in build_services(config)}
        for name in args.services:
            argv_, log = _command(name, specs, config, state)
            total, threads = _measure(argv_, log, specs.get(name), args.settle, args.span)
            top = ", ".join(f"{thread} {ms:.1f}" for thread, ms in threads[:6])
            print(
                f"{name:10} {total:6.1f} ms of CPU per s at rest ({total / 10:.2f} % of one core)"
                f" after {args.settle:.0f} s, over {args.span:.0f} s; threads: {top}",
                flush=True,
            )
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return 0


def _command(
    name: str, specs: dict[str, ServiceSpec], config: ClusterConfig, state: Path
) -> tuple[tuple[str, ...], Path]:
    """The argv of ``name`` and its log file, its configuration rendered."""
    if name == "jvm":
        source = state / "Sleep.java"
        source.write_text(_SLEEPER)
        return ("java", "-XX:+UseG1GC", "-Xmx256m", str(source)), state / "jvm.log"
    spec = specs[name]
    config.logs_dir.mkdir(parents=True, exist_ok=True)
    config.conf_dir.mkdir(parents=True, exist_ok=True)
    if spec.prepare is not None:
        spec.prepare()
    return spec.argv, spec.log


def _measure(
    argv: tuple[str, ...], log: Path, spec: ServiceSpec | None, settle_s: float, span_s: float
) -> tuple[float, list[tuple[str, float]]]:
    """Start ``argv``, wait for its ready line, settle, and return its CPU in ms per s and
    per thread name (digits folded: ``C2 CompilerThread0`` and ``1`` are one line)."""
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=out, start_new_session=True)
    try:
        marker = spec.ready_marker if spec is not None else None
        give_up = time.monotonic() + START_TIMEOUT_S
        while marker is not None and marker not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > give_up:
                raise RuntimeError(f"{argv[-1]} did not start; see {log}")
            time.sleep(1)
        time.sleep(settle_s)
        before = _threads(process.pid)
        time.sleep(span_s)
        after = _threads(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    per_name: dict[str, float] = defaultdict(float)
    for key, ms in after.items():
        per_name[re.sub(r"\d+", "#", key[1])] += (ms - before.get(key, 0.0)) / span_s
    ranked = sorted(per_name.items(), key=lambda item: -item[1])
    return sum(ms for _, ms in ranked), ranked


def _threads(pid: int) -> dict[tuple[str, str], float]:
    """CPU ms so far of each thread of ``pid``, by (tid, name)."""
    cpu: dict[tuple[str, str], float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                text = stat.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        cpu[(tid, name)] = (int(fields[11]) + int(fields[12])) * 1000 / _TICKS
    return cpu


if __name__ == "__main__":
    raise SystemExit(main())

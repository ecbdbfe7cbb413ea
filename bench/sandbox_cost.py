"""What the hardened sandboxes cost: sandbox start-up (deploy -> ready) and the latency of
a one-grain invocation, on both backends, against a cluster of its own.

Usage: ``python -m bench.sandbox_cost OUT.json [--rounds N] [--calls N]`` (the summary and
every sample go to OUT.json). The cluster lives
in ``build/bench-state`` on the default ports + 600 (so it collides neither with a cluster
of ``make run`` nor with the test suite's), and is stopped at the end. Rounds alternate the
backends so that a drift of the machine hits both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sand.client import SandClient
from sand.cluster.bootstrap import admin_token, ensure_admin_token
from sand.cluster.config import load_config
from sand.cluster.image import ensure_base_image
from sand.cluster.supervisor import Supervisor

ROOT = Path(__file__).resolve().parents[1]
PORT_SHIFT = 600
PORTS: dict[str, dict[str, Any]] = {
    "kafka": {"port": 19092 + PORT_SHIFT, "controller_port": 19093 + PORT_SHIFT},
    "cassandra": {
        "cql_port": 19042 + PORT_SHIFT,
        "storage_port": 17000 + PORT_SHIFT,
        "jmx_port": 17199 + PORT_SHIFT,
    },
    "frontend": {"ports": [18081 + PORT_SHIFT, 18082 + PORT_SHIFT]},
    "host_agent": {"port": 18090 + PORT_SHIFT},
    "nginx": {"port": 18080 + PORT_SHIFT},
}
BACKENDS = ("docker", "process")


def one_grain_app(parent: Path) -> Path:
    app = parent / "costone"
    (app / "grains").mkdir(parents=True)
    (app / "workflows").mkdir()
    (app / "app.yaml").write_text(
        "name: costone\ngrains:\n  noop: grains/noop.py\nworkflows:\n  main: workflows/main.yaml\n"
    )
    (app / "grains" / "noop.py").write_text("def handle(event, context):\n    return event\n")
    (app / "workflows" / "main.yaml").write_text("entry: noop\ngrains:\n  noop: {}\n")
    return app


def summary(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"n": len(ordered), "median_ms": statistics.median(ordered), "p99_ms": p99}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    overrides: dict[str, dict[str, object]] = {k: dict(v) for k, v in PORTS.items()}
    overrides["cluster"] = {"state_dir": str(ROOT / "build" / "bench-state")}
    config = load_config(env={}, overrides=overrides)
    supervisor = Supervisor(config, after_ready={"dockerd": lambda: ensure_base_image(config)})
    supervisor.up()
    ensure_admin_token(config)  # as `sand up` does
    token = admin_token(config)
    startup: dict[str, list[float]] = {b: [] for b in BACKENDS}
    latency: dict[str, list[float]] = {b: [] for b in BACKENDS}
    try:
        client = SandClient(config.gateway_url, token=token, timeout_s=120)
        with tempfile.TemporaryDirectory() as tmp:
            app = one_grain_app(Path(tmp))
            for round_ in range(args.rounds):
                order = BACKENDS if round_ % 2 == 0 else BACKENDS[::-1]
                for backend in order:
                    began = time.perf_counter()
                    client.deploy(app, backend=backend)
                    startup[backend].append((time.perf_counter() - began) * 1000)
                    for i in range(args.calls // args.rounds):
                        began = time.perf_counter()
                        execution = client.invoke("costone", {"i": i})
                        elapsed = (time.perf_counter() - began) * 1000
                        assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
                        if i >= 3:  # the first calls after a deploy warm the path up
                            latency[backend].append(elapsed)
                    client.undeploy("costone")
    finally:
        supervisor.down()
    report = {
        b: {
            "startup": summary(startup[b]),
            "one_grain": summary(latency[b]),
            "samples_ms": {"startup": startup[b], "one_grain": latency[b]},
        }
        for b in BACKENDS
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        json.dumps(
            {b: {k: v for k, v in r.items() if k != "samples_ms"} for b, r in report.items()}
        )
    )


if __name__ == "__main__":
    main()

"""Temporal as a peer (FULL profile): the Temporal CLI's dev server (built by `make bench
FULL=1` with `go install`, in-memory SQLite), one worker process running the activities on
2 threads, and the client here.

Hop: workflow `Hop` runs activity A (returns its end time), then activity B (returns its
start time minus A's end). Pipeline: workflow `Pipeline` runs the four grains as four
activities in sequence; states travel pickled (they carry the PNG the grains share).
"""

from __future__ import annotations

import asyncio
import pickle
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.peers import common

NAME = "temporal"
BINARY = common.REPO / "build" / "bin" / "temporal"


def version() -> str:
    import temporalio

    cli = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True).stdout
    return f"{cli.strip() or 'temporal CLI'} dev server, temporalio {temporalio.__version__}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _stack() -> Iterator[str]:
    """A private dev server and a worker process; yields the server's address."""
    if not BINARY.exists():
        raise common.PeerStartError(f"{NAME}: {BINARY} is missing; `make bench FULL=1` builds it")
    tmp = Path(tempfile.mkdtemp(prefix="peer-temporal-"))
    port = _free_port()
    target = f"127.0.0.1:{port}"
    server = [str(BINARY), "server", "start-dev", "--headless", "--ip", "127.0.0.1"]
    server += ["--port", str(port), "--http-port", str(_free_port())]
    server += ["--metrics-port", str(_free_port()), "--log-level", "error"]
    worker = [common.python(), "-m", "bench.peers.temporal_worker", target]
    try:
        with common.process_group(server, tmp / "server.log", common.worker_env()):
            common.wait_until(NAME, "dev server", lambda: _connects(target), 90)
            with common.process_group(worker, tmp / "worker.log", common.worker_env()):
                asyncio.run(_warm(target))
                yield target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _connects(target: str) -> bool:
    async def probe() -> bool:
        from temporalio.client import Client

        await Client.connect(target)
        return True

    return asyncio.run(probe())


async def _warm(target: str) -> None:
    from temporalio.client import Client

    client = await Client.connect(target)
    for _ in range(5):
        await client.execute_workflow(
            "Hop", id=uuid.uuid4().hex, task_queue="sand-bench", run_timeout=_timeout()
        )


def _timeout() -> Any:
    from datetime import timedelta

    return timedelta(seconds=common.RESULT_TIMEOUT_S)


def measure_hop(n: int, gap_s: float) -> list[float]:
    async def run(target: str) -> list[float]:
        from temporalio.client import Client

        client = await Client.connect(target)
        hops = []
        for i in range(common.WARMUP + n):
            hop = await client.execute_workflow(
                "Hop", id=uuid.uuid4().hex, task_queue="sand-bench", run_timeout=_timeout()
            )
            if i >= common.WARMUP:
                hops.append(float(hop))
            await asyncio.sleep(gap_s)
        return hops

    with _stack() as target:
        return asyncio.run(run(target))


def measure_pipeline(n: int, payload: dict[str, Any]) -> list[tuple[float, float]]:
    async def run(target: str) -> list[tuple[float, float]]:
        from temporalio.client import Client

        client = await Client.connect(target)
        runs = []
        for i in range(common.WARMUP + n):
            t0 = time.perf_counter()
            raw = await client.execute_workflow(
                "Pipeline",
                pickle.dumps(common.start_state(payload)),
                id=uuid.uuid4().hex,
                task_queue="sand-bench",
                run_timeout=_timeout(),
            )
            total = common.ms_since(t0)
            output = pickle.loads(raw)
            if i == 0 and payload == common.pipeline_input():
                common.check_output(NAME, output)
            if i >= common.WARMUP:
                runs.append((total, float(output["compute_ms"])))
        return runs

    with _stack() as target:
        return asyncio.run(run(target))

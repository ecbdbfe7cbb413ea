"""RQ as a peer: private Redis, two default (forking) workers on one queue.

Hop: job A enqueues job B at its end. Pipeline: each job runs its grain and enqueues the
next with the state as argument; the client waits on the last job's result stream. This
is faster than `depends_on`, where each dependent would fetch its parent's result from
Redis and RQ would do its dependency bookkeeping on every completion.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.peers import common

NAME = "rq"
WORKERS = 2
MODULE = "bench.peers.rq_tasks"
QUEUE = "peers"


def version() -> str:
    import rq

    return f"rq {rq.__version__} (redis, {WORKERS} forking workers)"


@contextmanager
def _cluster() -> Iterator[Any]:
    """Private Redis plus WORKERS worker processes; yields a client connection."""
    import redis

    with common.private_redis(NAME) as (sock, tmp), ExitStack() as stack:
        argv = [common.python(), "-m", "rq.cli", "worker", "--url", f"unix://{sock}"]
        argv += ["-c", MODULE, "--logging_level", "WARNING", QUEUE]
        procs = [
            stack.enter_context(
                common.process_group(argv, tmp / f"worker{i}.log", common.worker_env())
            )
            for i in range(WORKERS)
        ]
        conn = redis.Redis(unix_socket_path=sock)
        stack.callback(conn.close)
        _wait_ready(conn, procs, tmp)
        yield conn


def _wait_ready(conn: Any, procs: list[Any], tmp: Path) -> None:
    """Workers are ready once every one is registered and a no-op job round-trips."""
    from rq import Worker

    def registered() -> bool:
        for i, proc in enumerate(procs):
            if proc.poll() is not None:
                log = common.log_tail(tmp / f"worker{i}.log")
                raise common.PeerStartError(f"{NAME}: worker exited:\n{log}")
        return len(Worker.all(connection=conn)) == len(procs)

    common.wait_until(NAME, "workers", registered, common.START_TIMEOUT_S)
    job_id = uuid.uuid4().hex
    _enqueue(conn, "ping", (), job_id)
    _result(conn, job_id)


def _enqueue(conn: Any, func: str, args: tuple[Any, ...], job_id: str) -> None:
    from rq import Queue

    Queue(QUEUE, connection=conn).enqueue(f"{MODULE}.{func}", *args, job_id=job_id)


def _result(conn: Any, job_id: str) -> Any:
    """Block on the job's result stream (XREAD), without polling."""
    from rq.job import Job
    from rq.results import Result

    result = Job(job_id, connection=conn).latest_result(timeout=int(common.RESULT_TIMEOUT_S))
    if result is None:
        raise TimeoutError(f"{NAME}: no result for job {job_id}")
    if result.type != Result.Type.SUCCESSFUL:
        raise RuntimeError(f"{NAME}: job {job_id} failed: {result.exc_string}")
    return result.return_value


def _one_hop(conn: Any) -> float:
    b_id = uuid.uuid4().hex
    _enqueue(conn, "hop_a", (b_id,), uuid.uuid4().hex)
    return float(_result(conn, b_id))


def measure_hop(n: int, gap_s: float) -> list[float]:
    with _cluster() as conn:
        for _ in range(common.WARMUP):
            _one_hop(conn)
        hops = []
        for _ in range(n):
            time.sleep(gap_s)
            hops.append(_one_hop(conn))
        return hops


def _one_pipeline(conn: Any, payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    last_id = uuid.uuid4().hex
    state = common.start_state(payload)
    _enqueue(conn, "step", (state, list(common.GRAINS), last_id), uuid.uuid4().hex)
    output = _result(conn, last_id)
    return common.ms_since(t0), output


def measure_pipeline(n: int, payload: dict[str, Any]) -> list[tuple[float, float]]:
    with _cluster() as conn:
        for i in range(common.WARMUP):
            _, output = _one_pipeline(conn, payload)
            if i == 0 and payload == common.pipeline_input():
                common.check_output(NAME, output)
        runs = []
        for _ in range(n):
            total_ms, output = _one_pipeline(conn, payload)
            runs.append((total_ms, float(output["compute_ms"])))
        return runs

"""Celery as a peer: Redis broker and result backend, prefork pool of 2 processes.

Hop: task A, at its end, sends task B itself (`apply_async` inside A), as a function
calling a function would. Pipeline: a `celery.chain` of four signatures of one task that
runs the named SAND grain; the client waits on the chain's last result.
"""

from __future__ import annotations

import gc
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.peers import common

NAME = "celery"
CONCURRENCY = 2


def version() -> str:
    import celery

    return f"celery {celery.__version__} (redis broker, prefork {CONCURRENCY})"


@contextmanager
def _cluster() -> Iterator[Any]:
    """Private Redis plus one worker (prefork, 2 processes); yields the client's app."""
    from bench.peers.celery_tasks import SOCKET_ENV, make_app

    with common.private_redis(NAME) as (sock, tmp):
        env = {**common.worker_env(), SOCKET_ENV: sock}
        # Celery refuses pickle as root; the broker is a socket only its owner can open.
        env["C_FORCE_ROOT"] = "1"
        argv = [common.python(), "-m", "celery", "-A", "bench.peers.celery_tasks", "worker"]
        argv += ["--pool", "prefork", "--concurrency", str(CONCURRENCY)]
        argv += ["--prefetch-multiplier", "1", "--loglevel", "WARNING"]
        # No gossip, mingle or heartbeats: one worker has no peers to talk to.
        argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        log = tmp / "worker.log"
        app = make_app(sock)
        try:
            with common.process_group(argv, log, env) as proc:
                _wait_ready(app, proc, log)
                yield app
        finally:
            # Results sit in reference cycles; collected after Redis is gone, each would
            # retry its reconnect for minutes. Collect them while Redis is still up.
            gc.collect()
            app.close()


def _wait_ready(app: Any, proc: Any, log: Any) -> None:
    """The worker is ready once a no-op task round-trips through it."""
    deadline = time.monotonic() + common.START_TIMEOUT_S
    result = app.send_task("peer.ping")
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise common.PeerStartError(f"{NAME}: worker exited:\n{common.log_tail(log)}")
        if result.ready():
            result.get(timeout=1)
            return
        time.sleep(0.05)
    raise common.PeerStartError(
        f"{NAME}: worker not ready within {common.START_TIMEOUT_S:.0f} s:\n{common.log_tail(log)}"
    )


def _one_hop(app: Any) -> float:
    b_id = uuid.uuid4().hex
    app.send_task("peer.hop_a", args=(b_id,))
    return float(app.AsyncResult(b_id).get(timeout=common.RESULT_TIMEOUT_S))


def measure_hop(n: int, gap_s: float) -> list[float]:
    with _cluster() as app:
        for _ in range(common.WARMUP):
            _one_hop(app)
        hops = []
        for _ in range(n):
            time.sleep(gap_s)
            hops.append(_one_hop(app))
        return hops


def _one_pipeline(app: Any, payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    from celery import chain

    t0 = time.perf_counter()
    first, *rest = common.GRAINS
    flow = chain(
        app.signature("peer.step", args=(common.start_state(payload), first)),
        *(app.signature("peer.step", args=(name,)) for name in rest),
    )
    output = flow.apply_async().get(timeout=common.RESULT_TIMEOUT_S)
    return common.ms_since(t0), output


def measure_pipeline(n: int, payload: dict[str, Any]) -> list[tuple[float, float]]:
    with _cluster() as app:
        for i in range(common.WARMUP):
            _, output = _one_pipeline(app, payload)
            if i == 0 and payload == common.pipeline_input():
                common.check_output(NAME, output)
        runs = []
        for _ in range(n):
            total_ms, output = _one_pipeline(app, payload)
            runs.append((total_ms, float(output["compute_ms"])))
        return runs

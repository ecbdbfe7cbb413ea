"""Celery tasks of the peer benchmark, imported by the worker (`-A bench.peers.celery_tasks`).

Tasks have explicit names, so the client can send them by name whatever module path it
imported this file under.
"""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from bench.peers import common

SOCKET_ENV = "PEER_REDIS_SOCKET"


def make_app(socket_path: str) -> Celery:
    """A Celery app on the private Redis: broker and result backend on its unix socket."""
    url = f"redis+socket://{socket_path}"
    app = Celery("bench_peers", broker=url, backend=url, set_as_current=False)
    app.conf.update(
        # The brief's configuration: acks on receipt, one message prefetched per process.
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        # Pickle carries the pipeline's bytes (the data layer) as is; JSON would need base64.
        task_serializer="pickle",
        result_serializer="pickle",
        accept_content=["pickle", "json"],
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app


app = make_app(os.environ.get(SOCKET_ENV, "/nonexistent"))


@worker_process_init.connect
def _load_grains(**_: Any) -> None:
    # Each prefork child imports Pillow and the grains before its first task.
    common.load_grains()


@app.task(name="peer.ping")
def ping() -> str:
    return "pong"


@app.task(name="peer.hop_b")
def hop_b(a_end: float) -> float:
    b_start = time.time()
    return (b_start - a_end) * 1000.0


@app.task(name="peer.hop_a", ignore_result=True)
def hop_a(b_id: str) -> None:
    # "Function calls function": A sends B itself; the client knows B's id in advance.
    a_end = time.time()
    hop_b.apply_async(args=(a_end,), task_id=b_id)


@app.task(name="peer.step")
def step(state: dict[str, Any], name: str) -> dict[str, Any]:
    return common.run_step(name, state)

"""RQ jobs of the peer benchmark. The worker also loads this module as its settings module
(`rq worker -c bench.peers.rq_tasks`), so its parent imports the grains once and every
forked work horse inherits them, as SAND's grain worker does.

Jobs are enqueued by dotted name, so client and worker agree whatever path the client
imported this file under.
"""

from __future__ import annotations

import time
from typing import Any

from rq import Queue, get_current_job

from bench.peers import common

QUEUE = "peers"
MODULE = "bench.peers.rq_tasks"

common.load_grains()


def _queue() -> Queue:
    """The queue of the job being run, on that job's own Redis connection."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("rq_tasks jobs must run inside an RQ worker")
    return Queue(QUEUE, connection=job.connection)


def ping() -> str:
    return "pong"


def hop_b(a_end: float) -> float:
    b_start = time.time()
    return (b_start - a_end) * 1000.0


def hop_a(b_id: str) -> None:
    # "Function calls function": A enqueues B itself; the client knows B's id in advance.
    a_end = time.time()
    _queue().enqueue(f"{MODULE}.hop_b", a_end, job_id=b_id)


def step(state: dict[str, Any], remaining: list[str], last_id: str) -> dict[str, Any] | None:
    """Run the first of `remaining`, then enqueue the rest; the last one gets `last_id`.

    Intermediate jobs return None: their state travels in the next job, not in a result.
    """
    state = common.run_step(remaining[0], state)
    rest = remaining[1:]
    if not rest:
        return state
    job_id = last_id if len(rest) == 1 else None
    _queue().enqueue(f"{MODULE}.step", state, rest, last_id, job_id=job_id)
    return None

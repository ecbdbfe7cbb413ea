"""Temporal workflows and activities of the peer benchmark (imported by the worker process).

Activities are called by name from the workflows, so the workflow sandbox never imports
the grain code. States travel pickled as bytes: they carry the PNG the grains share.
"""

from __future__ import annotations

import pickle
import time
from datetime import timedelta

from temporalio import activity, workflow

TASK_QUEUE = "sand-bench"
_TIMEOUT = timedelta(seconds=60)


@activity.defn(name="hop_a")
def hop_a() -> float:
    return time.time()


@activity.defn(name="hop_b")
def hop_b(a_end: float) -> float:
    return (time.time() - a_end) * 1000.0


@activity.defn(name="step")
def step(name: str, state: bytes) -> bytes:
    from bench.peers import common

    return pickle.dumps(common.run_step(name, pickle.loads(state)))


@workflow.defn(name="Hop")
class Hop:
    @workflow.run
    async def run(self) -> float:
        a_end = await workflow.execute_activity("hop_a", start_to_close_timeout=_TIMEOUT)
        hop: float = await workflow.execute_activity(
            "hop_b", a_end, start_to_close_timeout=_TIMEOUT
        )
        return hop


@workflow.defn(name="Pipeline")
class Pipeline:
    @workflow.run
    async def run(self, state: bytes) -> bytes:
        for name in ("extract_metadata", "transform", "tag", "thumbnail"):
            state = await workflow.execute_activity(
                "step", args=[name, state], start_to_close_timeout=_TIMEOUT
            )
        return state

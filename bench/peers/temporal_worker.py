"""`python -m bench.peers.temporal_worker HOST:PORT`: the Temporal worker process of the
peer benchmark (activities on a pool of 2 threads, as the other peers get 2 workers)."""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from temporalio.client import Client
from temporalio.worker import Worker

from bench.peers import common, temporal_flows


async def serve(target: str) -> None:
    common.load_grains()
    client = await Client.connect(target)
    with ThreadPoolExecutor(max_workers=2) as pool:
        worker = Worker(
            client,
            task_queue=temporal_flows.TASK_QUEUE,
            workflows=[temporal_flows.Hop, temporal_flows.Pipeline],
            activities=[temporal_flows.hop_a, temporal_flows.hop_b, temporal_flows.step],
            activity_executor=pool,
            max_concurrent_activities=2,
        )
        await worker.run()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))

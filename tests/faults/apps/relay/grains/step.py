"""One step of the relay (the three grains share this file): adds the grain's name to the path
and prints one run line, so that the test can count grains that ran more than once."""

import os
import time


def handle(event, context):
    # one line per run in the sandbox's output (the app's log on its host): the test counts
    # grains that ran more than once and, by the time (epoch ms) and the host whose log it is,
    # which host had an execution in flight when it was killed (a hardened sandbox writes
    # nowhere the test can read)
    now_ms = time.time_ns() // 1_000_000
    print(
        f"SAND-RUN {context.execution_id} {context.grain_name} {os.getpid()} {now_ms}", flush=True
    )
    time.sleep(event.get("sleep_s", 0.05))
    return {**event, "path": [*event.get("path", []), context.grain_name]}

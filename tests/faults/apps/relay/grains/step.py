"""One step of the relay (the three grains share this file): adds the grain's name to the path
and appends one line to the run log the test names in the input (the process backend lets
grains write there), so that the test can count grains that ran more than once."""

import os
import time


def handle(event, context):
    with open(event["log"], "a", encoding="utf-8") as log:
        log.write(f"{context.execution_id} {context.grain_name} {os.getpid()}\n")
    time.sleep(event.get("sleep_s", 0.05))
    return {**event, "path": [*event.get("path", []), context.grain_name]}

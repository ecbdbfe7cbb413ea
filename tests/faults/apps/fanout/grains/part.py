"""One part of the fan-out workflow (every grain shares this file): adds the grain's name to
the path and appends one line to the run log the test names in the input (the process backend
lets grains write there); a Map item's line names its item, so reruns can be counted."""

import os
import time


def handle(event, context):
    name = context.grain_name
    if "item" in event:
        name = f"{name}:{event['item']}"
    with open(event["log"], "a", encoding="utf-8") as log:
        log.write(f"{context.execution_id} {name} {os.getpid()}\n")
    time.sleep(event.get("sleep_s", 0.05))
    return {**event, "path": [*event.get("path", []), context.grain_name]}

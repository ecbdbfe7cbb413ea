"""Quiet, busy or asleep, as the event asks (see app.yaml)."""

import time


def handle(event, context):
    if "spin_s" in event:
        until = time.monotonic() + float(event["spin_s"])
        loops = 0
        while time.monotonic() < until:
            loops += 1
        return {"loops": loops, "cpu_s": time.process_time()}
    if "sleep_s" in event:
        time.sleep(float(event["sleep_s"]))
        return {"slept_s": event["sleep_s"]}
    return {"pong": event.get("n")}

"""Sleep ``sleep_s`` seconds (default 0), then return the event's ``n``."""

import time


def handle(event, context):
    time.sleep(float(event.get("sleep_s", 0)))
    return {"n": event.get("n")}

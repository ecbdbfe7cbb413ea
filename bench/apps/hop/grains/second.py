import time


def handle(event, context):
    started = time.time()
    return {"hop_ms": (started - event["ended"]) * 1000}

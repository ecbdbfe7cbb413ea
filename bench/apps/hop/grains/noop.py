import time


def handle(event, context):
    started = time.perf_counter()
    result = {"echo": event}
    return {"grain_ms": (time.perf_counter() - started) * 1000, **result}

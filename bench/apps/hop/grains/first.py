import time


def handle(event, context):
    return {"ended": time.time()}

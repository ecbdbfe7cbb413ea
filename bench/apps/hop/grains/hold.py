import time


def handle(event, context):
    time.sleep(float(event.get("seconds", 5)))
    return {"held": True}

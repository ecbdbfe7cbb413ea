"""Sleeps event["seconds"], then returns its event."""

import time


def handle(event, context):
    time.sleep(event["seconds"])
    return event

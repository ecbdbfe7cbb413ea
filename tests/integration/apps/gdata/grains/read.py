"""Reads the key named in the event's "read" from the global data layer."""

import os


def handle(event, context):
    key = event["read"]
    return {"host": os.environ.get("SAND_HOST_ID"), "value": context.data.get(key, scope="global")}

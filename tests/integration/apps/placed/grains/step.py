"""Adds one to n and notes which grain ran on which host (the sandbox's SAND_HOST_ID), so
that the result shows where each hop of the execution ran."""

import os


def handle(event, context):
    ran = [*event.get("ran", []), [context.grain_name, os.environ.get("SAND_HOST_ID", "?")]]
    return {"n": event["n"] + 1, "ran": ran}

"""Finish the greeting with an exclamation mark."""


def handle(event, context):
    return {**event, "greeting": event["greeting"] + "!"}

"""Returns {"wrapped": event}."""


def handle(event, context):
    return {"wrapped": event}

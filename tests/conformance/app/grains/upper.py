"""Upper-cases a string event, or the "text" field of an object event."""


def handle(event, context):
    if isinstance(event, str):
        return event.upper()
    return {**event, "text": event["text"].upper()}

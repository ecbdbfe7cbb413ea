"""Native dynamic next: picks each grain of event["next"], returns event.get("output", event)."""


def handle(event, context):
    for name in event.get("next", []):
        context.add_next(name)
    return event.get("output", event)

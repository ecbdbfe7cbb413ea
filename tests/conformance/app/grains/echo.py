"""Returns its event unchanged."""


def handle(event, context):
    return event

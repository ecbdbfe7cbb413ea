"""Returns event["a"] + event["b"]."""


def handle(event, context):
    return event["a"] + event["b"]

def handle(event, context):
    return {"done": event}

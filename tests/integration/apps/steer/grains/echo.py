def handle(event, context):
    if isinstance(event, dict) and event.get("boom"):
        raise ValueError("boom asked for")
    return event

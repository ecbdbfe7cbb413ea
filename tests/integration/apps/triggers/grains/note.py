def handle(event, context):
    print(f"noted {event!r} execution={context.execution_id}", flush=True)
    return {"noted": event}

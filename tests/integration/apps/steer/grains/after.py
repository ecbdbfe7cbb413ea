def handle(event, context):
    print(f"after ran execution={context.execution_id}", flush=True)
    return {"after": True, **event}

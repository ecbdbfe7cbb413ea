import time


def handle(event, context):
    print(f"slow started execution={context.execution_id}", flush=True)
    time.sleep(event.get("sleep_s", 30))
    return event

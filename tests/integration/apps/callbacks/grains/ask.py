"""Hand out the task token (in the log, for the test to find), then take sleep_s seconds:
an answer may come while this still runs, before the wait is registered."""

import time


def handle(event, context):
    print(f"token={context.task_token} execution={context.execution_id}", flush=True)
    time.sleep(event.get("sleep_s", 0))
    return {"asked": True}

"""Ask for an approval: keep the task token where the approver's tool finds it, and say how
to answer. The execution waits for the answer, not for this grain: it returns at once."""


def handle(event, context):
    token = context.task_token
    # An approver's tool would list the pending approvals from the global data layer.
    context.data.put(f"approvals/{event['order_id']}", {"token": token, "amount": event["amount"]})
    context.logger.warning(
        "order %s (%s) needs an approval: sand task success %s --output '{\"approved\": true, \"by\": \"you\"}'",
        event["order_id"],
        event["amount"],
        token,
    )
    return {"asked": event["order_id"]}

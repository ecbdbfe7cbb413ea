"""Ship an approved order."""


def handle(event, context):
    return {"shipped": event["order_id"], "approved_by": event["approval"]["by"]}

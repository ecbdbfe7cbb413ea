"""Count an order and add up the revenue in the app's data layer."""


def handle(event, context):
    count = context.data.get("orders/count", 0) + 1
    revenue = context.data.get("orders/revenue", 0) + event["amount"]
    context.data.put("orders/count", count)
    context.data.put("orders/revenue", revenue)
    return {"id": event["id"], "orders": count, "revenue": revenue}

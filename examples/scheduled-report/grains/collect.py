"""Read the figures a report covers from the app's data layer (where the app's other
workflows, or an operator, keep them; 0 until then)."""


def handle(event, context):
    period = event.get("period", "yesterday")
    orders = context.data.get("orders/count", 0)
    revenue = context.data.get("orders/revenue", 0)
    return {"period": period, "orders": orders, "revenue": revenue}

"""Reserve the goods in the warehouse."""


def handle(event, context):
    total = sum(line["amount_cents"] for line in event["lines"])
    skus = sorted({line["sku"] for line in event["lines"]})
    context.data.put(f"reservations/{event['order_id']}", skus, scope="global")
    return {"id": f"R-{event['order_id']}", "skus": skus, "total_cents": total}

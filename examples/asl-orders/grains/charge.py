"""Charge the customer, unless the total is above their limit."""

LIMIT_CENTS = 5000


class PaymentDeclined(Exception):
    """The card was declined; the workflow sends an invoice instead."""


def handle(event, context):
    total = sum(line["amount_cents"] for line in event["lines"])
    if total > LIMIT_CENTS:
        raise PaymentDeclined(f"{total} cents is above the limit of {LIMIT_CENTS}")
    return {"status": "charged", "customer": event["customer"], "total_cents": total}

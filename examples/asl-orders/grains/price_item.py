"""Price one order line. The price service is "busy" on the first call for figs: the
workflow's Retry runs this grain again after one second (attempts are counted in the
data layer, which every grain instance of the execution shares)."""

PRICES_CENTS = {"apple": 45, "pear": 60, "fig": 120, "melon": 350}


class PriceServiceBusy(Exception):
    """Transient: try again later."""


def handle(event, context):
    sku = event["sku"]
    attempts_key = f"attempts/{event['order_id']}/{sku}"
    attempt = context.data.get(attempts_key, 0) + 1
    context.data.put(attempts_key, attempt)
    if sku == "fig" and attempt == 1:
        raise PriceServiceBusy(f"no price for {sku} yet, attempt {attempt}")
    unit = PRICES_CENTS[sku]
    return {
        "line": event["line"],
        "sku": sku,
        "qty": event["qty"],
        "unit_cents": unit,
        "amount_cents": unit * event["qty"],
        "attempts": attempt,
    }

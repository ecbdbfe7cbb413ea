"""Reserve the stock of a quote: {"quote_id", "skus"} -> {"reservation"}.

The warehouse is "busy" on the first call for a quote: the workflow's Retry calls this
grain again (attempts are counted in the data layer every grain instance shares)."""


class WarehouseBusy(Exception):
    """Transient: try again."""


def handle(event, context):
    key = f"reserve-attempts/{event['quote_id']}"
    attempt = context.data.get(key, 0) + 1
    context.data.put(key, attempt)
    if attempt == 1:
        raise WarehouseBusy("the warehouse is busy, attempt 1")
    return {"reservation": f"R-{event['quote_id']}-{len(event['skus'])}", "attempts": attempt}

import time


def handle(event, context):
    """Prices one item. Its first ``fail_runs`` runs in an execution fail, and its run number
    ``sleep_on_run`` sleeps ``sleep_s`` first (a run to stop in the middle)."""
    key = f"price-{context.execution_id}-{event['sku']}"
    runs = context.data.get(key, 0) + 1
    context.data.put(key, runs)
    context.logger.info("price %s run %d", event["sku"], runs)
    if runs == event.get("sleep_on_run"):
        time.sleep(event.get("sleep_s", 0))
    if runs <= event.get("fail_runs", 0):
        raise ValueError(f"no price for {event['sku']} (run {runs})")
    return {"sku": event["sku"], "runs": runs}

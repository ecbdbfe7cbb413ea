def handle(event, context):
    """Fails the first time it runs for an execution, succeeds after (a redrive)."""
    key = f"ran-{context.execution_id}"
    runs = context.data.get(key, 0) + 1
    context.data.put(key, runs)
    print(f"flaky run {runs} execution={context.execution_id}", flush=True)
    if runs == 1:
        raise RuntimeError("the first run always fails")
    return {"flaky_runs": runs, "seen": event}

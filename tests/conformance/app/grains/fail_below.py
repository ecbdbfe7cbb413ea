"""Fails (error event.get("error", "Transient")) while event["retry"] < event["succeed_at"].

Cases pass ``"retry.$": "$$.State.RetryCount"`` so the attempt number comes from the
context object: no state outside the event is needed.
"""


class Transient(Exception):
    """The default retryable error."""


def handle(event, context):
    if event["retry"] < event["succeed_at"]:
        name = event.get("error", "Transient")
        cls = Transient if name == "Transient" else type(name, (Exception,), {})
        raise cls(f"attempt {event['retry']} fails")
    return {"retries": event["retry"]}

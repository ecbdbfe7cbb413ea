"""Fails with event["errors"][event["retry"]] while the list lasts, then returns event["retry"].

With ``"retry.$": "$$.State.RetryCount"`` a case scripts the error of every attempt.
"""


def handle(event, context):
    errors = event["errors"]
    if event["retry"] < len(errors):
        raise type(errors[event["retry"]], (Exception,), {})(f"attempt {event['retry']}")
    return event["retry"]

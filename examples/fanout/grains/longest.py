"""The longest word (the first one among equals)."""


def handle(event, context):
    longest = max(event["words"], key=len, default="")
    return {"stat": "longest", "word": longest}

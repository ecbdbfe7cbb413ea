"""Count the words and the distinct words."""


def handle(event, context):
    words = event["words"]
    return {"stat": "words", "total": len(words), "distinct": len(set(words))}

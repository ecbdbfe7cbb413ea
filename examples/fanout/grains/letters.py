"""The three most frequent letters (ties broken alphabetically)."""

from collections import Counter


def handle(event, context):
    counts = Counter(ch for word in event["words"] for ch in word if ch.isalpha())
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
    return {"stat": "letters", "top": [letter for letter, _ in top]}

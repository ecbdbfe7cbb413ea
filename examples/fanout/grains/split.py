"""Split a text into lowercase words."""

import re


def handle(event, context):
    words = re.findall(r"[a-z']+", str(event["text"]).lower())
    return {"words": words}

"""Grain 4: make a 64 px thumbnail and store it, with the metadata, in the data layer."""

import io

from PIL import Image

# Load Pillow's format plugins now, at import: the grain worker imports this module once
# and forks every instance from it, so no instance pays for the plugins again.
Image.init()

SIDE = 64


def handle(event, context):
    normalized = event["normalized"]
    with Image.open(io.BytesIO(context.data.get(normalized["key"]))) as image:
        image.thumbnail((SIDE, SIDE))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        size = image.size
    key = f"thumbnails/{event['name']}.png"
    context.data.put(key, buffer.getvalue())
    # The paper's pipeline keeps the metadata in a separate file: here, a data-layer key.
    context.data.put(f"metadata/{event['name']}.json", {**event["metadata"], "tags": event["tags"]})
    context.data.delete(normalized["key"])
    return {"key": key, "width": size[0], "height": size[1]}

"""Grain 2: verify the image and transform it to the pipeline's format (RGB PNG, <= 256 px).

The normalized image goes to the data layer; the event only carries its key.
"""

import base64
import io

from PIL import Image

# Load Pillow's format plugins now, at import: the grain worker imports this module once
# and forks every instance from it, so no instance pays for the plugins again.
Image.init()

MAX_SIDE = 4096
TARGET_SIDE = 256


class ImageTooLarge(Exception):
    """The image is larger than the pipeline accepts."""


def handle(event, context):
    metadata = event["metadata"]
    if max(metadata["width"], metadata["height"]) > MAX_SIDE:
        raise ImageTooLarge(f"{metadata['width']}x{metadata['height']} is above {MAX_SIDE} px")
    with Image.open(io.BytesIO(base64.b64decode(event["image"]))) as image:
        image = image.convert("RGB")
        image.thumbnail((TARGET_SIDE, TARGET_SIDE))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
    key = f"images/{context.execution_id}/normalized.png"
    context.data.put(key, buffer.getvalue())
    return {"key": key, "width": image.width, "height": image.height}

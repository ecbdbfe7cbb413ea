"""Grain 1: read the image and extract its metadata (format, size, colour mode)."""

import base64
import binascii
import io

from PIL import Image

# Load Pillow's format plugins now, at import: the grain worker imports this module once
# and forks every instance from it, so no instance pays for the plugins again.
Image.init()


def handle(event, context):
    try:
        raw = base64.b64decode(event["image"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"image is not valid base64: {exc}") from None
    # Pillow raises UnidentifiedImageError for bytes that are no image it knows.
    with Image.open(io.BytesIO(raw)) as image:
        metadata = {
            "format": image.format,
            "width": image.width,
            "height": image.height,
            "mode": image.mode,
            "bytes": len(raw),
        }
    context.logger.info("metadata %s", metadata)
    return metadata

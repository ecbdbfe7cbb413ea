"""Regenerate the sample image of expected.json: python make_input.py > input.json"""

import base64
import io
import json

from PIL import Image, ImageDraw


def sample_png(width=96, height=64):
    image = Image.new("RGB", (width, height))
    for x in range(width):
        for y in range(height):
            image.putpixel((x, y), (40 + x, 60 + y, 200))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 16, 60, 44), fill=(240, 220, 40))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


if __name__ == "__main__":
    print(json.dumps({"name": "sample", "image": sample_png()}))

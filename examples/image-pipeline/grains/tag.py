"""Grain 3: tag the image. The paper runs SqueezeNet here; we do honest CPU work instead:
a Sobel edge filter, brightness and the dominant colour, all in pure Python."""

import io

from PIL import Image

# Load Pillow's format plugins now, at import: the grain worker imports this module once
# and forks every instance from it, so no instance pays for the plugins again.
Image.init()

COLOURS = {
    "red": (200, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 70, 200),
    "yellow": (220, 200, 40),
    "white": (240, 240, 240),
    "black": (20, 20, 20),
    "grey": (128, 128, 128),
}


def _distance(rgb, name):
    return sum((a - b) ** 2 for a, b in zip(rgb, COLOURS[name], strict=True))


def _nearest_colour(rgb):
    return min(COLOURS, key=lambda name: _distance(rgb, name))


def _edge_density(gray, width, height):
    """Share of pixels whose Sobel gradient magnitude is above a threshold."""
    edges = 0
    for y in range(1, height - 1):
        above, row, below = (y - 1) * width, y * width, (y + 1) * width
        for x in range(1, width - 1):
            gx = (
                gray[above + x + 1]
                + 2 * gray[row + x + 1]
                + gray[below + x + 1]
                - gray[above + x - 1]
                - 2 * gray[row + x - 1]
                - gray[below + x - 1]
            )
            gy = (
                gray[below + x - 1]
                + 2 * gray[below + x]
                + gray[below + x + 1]
                - gray[above + x - 1]
                - 2 * gray[above + x]
                - gray[above + x + 1]
            )
            if gx * gx + gy * gy > 128 * 128:
                edges += 1
    return edges / max(1, (width - 2) * (height - 2))


def handle(event, context):
    with Image.open(io.BytesIO(context.data.get(event["key"]))) as image:
        rgb = list(image.convert("RGB").getdata())
        gray = list(image.convert("L").getdata())
        width, height = image.size
    brightness = sum(gray) / len(gray)
    counts = {}
    for pixel in rgb:
        name = _nearest_colour(pixel)
        counts[name] = counts.get(name, 0) + 1
    dominant = max(sorted(counts), key=counts.get)
    density = _edge_density(gray, width, height)
    tags = [
        "bright" if brightness >= 128 else "dark",
        dominant,
        "detailed" if density > 0.02 else "smooth",
        "landscape" if width > height else "portrait" if height > width else "square",
    ]
    context.logger.info("tags %s (edge density %.3f)", tags, density)
    return tags

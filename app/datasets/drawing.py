"""Drawn images for demo projects: shapes and their colours, made with Pillow so demos run offline."""

from __future__ import annotations

import io
import random

from PIL import Image, ImageDraw

SHAPES = ["circle", "square", "triangle"]
COLOURS = {"red": (220, 40, 40), "green": (40, 160, 60), "blue": (40, 80, 220), "yellow": (240, 200, 30)}


def draw_shape(shape: str, colour: tuple[int, int, int], seed: int, size: int = 320) -> bytes:
    rnd = random.Random(seed)
    bg = tuple(rnd.randint(200, 255) for _ in range(3))
    img = Image.new("RGB", (size, size), bg)
    d = ImageDraw.Draw(img)
    r = rnd.randint(size // 5, size // 3)
    paint(d, shape, rnd.randint(r + 5, size - r - 5), rnd.randint(r + 5, size - r - 5), r, colour)
    return png(img)


def paint(d: ImageDraw.ImageDraw, shape: str, cx: int, cy: int, r: int, colour: tuple[int, int, int]) -> None:
    if shape == "circle":
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    elif shape == "square":
        d.rectangle((cx - r, cy - r, cx + r, cy + r), fill=colour)
    else:
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)


def png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()

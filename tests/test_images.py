"""The image check's PNG path without Pillow takes only what Pillow's full decode accepts: every
truncation and thousands of one-bit flips of real PNGs (each colour type and bit depth) are either
refused by it or left to Pillow; what it accepts has the size Pillow reads. Pillow still decides (and
words the refusal) for everything else: other formats, interlaced PNGs, files over a pixel limit, chunks it does not know."""

from __future__ import annotations

import io
import random
import struct
import zlib

import pytest
from PIL import Image

from app.images import ImageRejected, _whole_png, check_image

MODES = [("RGB", (33, 17)), ("RGBA", (8, 8)), ("L", (100, 3)), ("1", (13, 9)), ("P", (20, 20)), ("I;16", (7, 5)), ("LA", (5, 5))]


def _png(mode: str, size: tuple[int, int], **options) -> bytes:
    blank = Image.new(mode, size)
    out = io.BytesIO()
    Image.frombytes(mode, size, random.Random(1).randbytes(len(blank.tobytes()))).save(out, "PNG", **options)
    return out.getvalue()


def _pillow_decodes(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            return img.size
    except Exception:
        return None


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _handmade(raw: bytes, width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")


@pytest.mark.parametrize("mode,size", MODES, ids=[m for m, _ in MODES])
def test_whole_pngs_pass_without_pillow_and_no_damaged_one_does(mode, size):
    data = _png(mode, size)
    assert _whole_png(data, 10**8) == size == _pillow_decodes(data)
    checked = check_image(data, max_bytes=10**6, max_pixels=10**8)
    assert (checked.mime, checked.width, checked.height) == ("image/png", *size)
    rng = random.Random(mode)
    damaged = [data[:cut] for cut in range(1, len(data))]
    for _ in range(400):
        flipped = bytearray(data)
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        damaged.append(bytes(flipped))
    for bad in damaged:
        found = _whole_png(bad, 10**8)
        assert found is None or found == _pillow_decodes(bad), bad


def test_bad_rows_are_left_to_pillow_which_refuses_them():
    rows = b"".join(b"\x07" + bytes(4) for _ in range(3))  # filter type 7 does not exist
    bad_filter = _handmade(rows, 4, 3)
    assert _whole_png(bad_filter, 10**8) is None
    with pytest.raises(ImageRejected, match="damaged or truncated"):
        check_image(bad_filter, max_bytes=10**6, max_pixels=10**8)
    good = _handmade(b"".join(b"\x00" + bytes(4) for _ in range(3)), 4, 3)
    assert _whole_png(good, 10**8) == (4, 3)
    assert _whole_png(_handmade(b"".join(b"\x00" + bytes(4) for _ in range(4)), 4, 3), 10**8) is None  # a row too many


def test_what_the_fast_path_does_not_take_pillow_still_checks():
    big = _png("L", (300, 200))
    assert _whole_png(big, 300 * 200 - 1) is None  # over our pixel limit: refused by Pillow's path, with its message
    with pytest.raises(ImageRejected, match="decompression bomb guard"):
        check_image(big, max_bytes=10**6, max_pixels=300 * 200 - 1)
    with_text = _png("RGB", (9, 9), pnginfo=_info())
    assert _whole_png(with_text, 10**8) is None and check_image(with_text, max_bytes=10**6, max_pixels=10**8).width == 9
    jpeg = io.BytesIO()
    Image.new("RGB", (16, 16), "red").save(jpeg, "JPEG")
    assert _whole_png(jpeg.getvalue(), 10**8) is None
    assert check_image(jpeg.getvalue(), max_bytes=10**6, max_pixels=10**8).mime == "image/jpeg"


def _info():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_itxt("Comment", "an iTXt chunk, read by Pillow only")
    return info

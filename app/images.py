"""Image validation on import (decode, size and pixel limits, decompression bombs) and WebP
thumbnails. A plain PNG is checked with zlib alone (`_whole_png`: its chunks' CRCs, its pixel data
inflated to the size its header gives, no image made), a sixth of Pillow's cost; anything else, and any
PNG it doubts, goes through Pillow's decode. The perceptual hash is not taken here: the worker's `hash_images` job computes it once
the import is committed (`app.services.leaks.leaks.hash_missing`), so a request never hashes."""

from __future__ import annotations

import hashlib
import io
import struct
import warnings
import zlib
from dataclasses import dataclass

from PIL import Image, ImageOps

from app.errors import size_text

ALLOWED_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageRejected(ValueError):
    pass


@dataclass(frozen=True)
class CheckedImage:
    sha256: str
    mime: str
    width: int
    height: int
    size_bytes: int
    data: bytes

    @property
    def storage_key(self) -> str:
        ext = self.mime.split("/")[1].replace("jpeg", "jpg")
        return f"images/{self.sha256[:2]}/{self.sha256}.{ext}"


def check_image(data: bytes, *, max_bytes: int, max_pixels: int) -> CheckedImage:
    """Accept `data` only if it is a whole image of an allowed format within the limits: its header
    is read, then all its data decoded (a truncated or damaged file fails), as cheaply as Pillow
    allows. A plain PNG that `_whole_png` finds whole is accepted without Pillow; every other file,
    and every PNG it has a doubt about, is decided by Pillow (and refused with Pillow's reason)."""
    if len(data) > max_bytes:
        raise ImageRejected(f"image is {size_text(len(data))}; the limit is {size_text(max_bytes)}")
    if not data:
        raise ImageRejected("file is empty")
    size = _whole_png(data, max_pixels)
    if size is not None:
        return CheckedImage(hashlib.sha256(data).hexdigest(), "image/png", size[0], size[1], len(data), data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            # Opening reads the header only, so the pixel check runs before any decoding.
            with Image.open(io.BytesIO(data)) as img:
                fmt = img.format
                width, height = img.size
                if fmt not in ALLOWED_FORMATS:
                    raise ImageRejected(f"format {fmt} is not accepted (use PNG, JPEG, WebP or GIF)")
                if width * height > max_pixels:
                    raise ImageRejected(
                        f"image is {width}x{height} = {width * height:,} pixels; the limit is {max_pixels:,}"
                        " (decompression bomb guard)"
                    )
                # A JPEG is decoded at its smallest scale (1/8): all its data is still read and
                # entropy-decoded, so a truncated or damaged file fails just the same.
                img.draft(None, (1, 1))
                img.load()
        except ImageRejected:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ImageRejected(f"image rejected as a decompression bomb: {exc}") from None
        except Image.UnidentifiedImageError:
            raise ImageRejected("not an image (could not identify the file as PNG, JPEG, WebP or GIF)") from None
        except (OSError, SyntaxError, ValueError) as exc:
            raise ImageRejected(f"image is damaged or truncated: {exc}") from None
    return CheckedImage(hashlib.sha256(data).hexdigest(), ALLOWED_FORMATS[fmt], width, height, len(data), data)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}  # colour type -> bit depths
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# The chunks besides IDAT taken without Pillow, each with the lengths Pillow reads without fault.
_PNG_CHUNKS = {
    b"IEND": lambda n, c: n == 0, b"PLTE": lambda n, c: 0 < n <= 768 and n % 3 == 0,
    b"tRNS": lambda n, c: (c == 0 and n == 2) or (c == 2 and n == 6) or (c == 3 and n <= 256),
    b"pHYs": lambda n, c: n == 9, b"gAMA": lambda n, c: n == 4, b"sRGB": lambda n, c: n == 1, b"cHRM": lambda n, c: n == 32,
    b"tIME": lambda n, c: n == 7,
}
_INFLATE_STEP = 1 << 20  # the pixel data is inflated a MiB at a time: memory stays flat whatever the image


def _whole_png(data: bytes, max_pixels: int) -> tuple[int, int] | None:
    """(width, height) of a non-interlaced PNG that is whole: a valid header within both pixel limits
    (ours and Pillow's bomb guard, checked before anything is inflated), every chunk's CRC right up to
    IEND, a palette before the pixels where the colour type needs one, and pixel data that inflates
    to exactly the rows the header announces, each with a known filter type. That is what Pillow's
    decode would find wrong in a PNG, found with zlib alone (no pixel is unfiltered, no image made).
    None when anything differs, however slightly: Pillow then decides, and words the refusal."""
    if len(data) < 45 or not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR" or data[8:12] != b"\x00\x00\x00\x0d":
        return None
    width, height, depth, colour, compression, filtering, interlace = struct.unpack_from(">IIBBBBB", data, 16)
    if (not 0 < width < 2**31 or not 0 < height < 2**31 or depth not in _PNG_DEPTHS.get(colour, ())
            or (compression, filtering, interlace) != (0, 0, 0)
            or width * height > min(max_pixels, Image.MAX_IMAGE_PIXELS or max_pixels)):
        return None
    if zlib.crc32(memoryview(data)[12:29]) != struct.unpack_from(">I", data, 29)[0]:
        return None
    idat, at, palette, ended = [], 33, False, False
    while at + 12 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, at)
        end = at + 8 + length
        if end + 4 > len(data):
            return None
        if zlib.crc32(memoryview(data)[at + 4:end]) != struct.unpack_from(">I", data, end)[0]:
            return None
        if kind == b"IDAT":
            if idat and idat[-1][1] != at or colour == 3 and not palette:
                return None  # IDAT chunks come in one run, after the palette
            idat.append((at + 8, end + 4))
        elif not _PNG_CHUNKS.get(kind, lambda n, c: False)(length, colour):
            return None  # a chunk Pillow would read some other way: Pillow decides
        palette |= kind == b"PLTE"
        at = end + 4
        if kind == b"IEND":
            ended = True
            break
    if not ended or not idat:
        return None
    stride = 1 + (width * depth * _PNG_CHANNELS[colour] + 7) // 8
    return (width, height) if _inflates_to(data, [(start, stop - 4) for start, stop in idat], stride, height) else None


def _inflates_to(data: bytes, parts: list[tuple[int, int]], stride: int, rows: int) -> bool:
    """Whether the zlib stream split over `parts` (slices of `data`) ends where it should and inflates
    to `rows` rows of `stride` bytes, each row's first byte a filter type (0 to 4)."""
    inflater, view, done, wanted = zlib.decompressobj(), memoryview(data), 0, stride * rows

    def fits(chunk: bytes) -> bool:  # the rows so far fit the header, each row's filter type known
        nonlocal done
        done += len(chunk)
        return done <= wanted and max(chunk[(len(chunk) - done) % stride::stride], default=0) <= 4

    try:
        for start, stop in parts:
            pending = view[start:stop]
            while pending:
                if not fits(inflater.decompress(pending, _INFLATE_STEP)):
                    return False
                pending = inflater.unconsumed_tail
        while not inflater.eof and (chunk := inflater.decompress(b"", _INFLATE_STEP)):
            if not fits(chunk):
                return False
    except zlib.error:
        return False
    return inflater.eof and not inflater.unused_data and done == wanted


def thumbnail_key(sha256: str, size: int) -> str:
    return f"thumbs/{size}/{sha256[:2]}/{sha256}.webp"


def make_thumbnail(data: bytes, size: int) -> bytes:
    with Image.open(io.BytesIO(data)) as img:
        img = ImageOps.exif_transpose(img)
        img.thumbnail((size, size))
        if img.mode not in ("RGB", "RGBA"):
            img = img.convert("RGBA" if "A" in img.getbands() or img.mode == "P" else "RGB")
        out = io.BytesIO()
        img.save(out, "WEBP", quality=85, method=4)
        return out.getvalue()

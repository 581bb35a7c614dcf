"""Image validation on import (decode, size and pixel limits, decompression bombs), the perceptual
hash computed in the same decode, and WebP thumbnails."""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps

from app import leakage
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
    phash: int | None = None  # None: it could not be computed here (the worker's backfill tries again)

    @property
    def storage_key(self) -> str:
        ext = self.mime.split("/")[1].replace("jpeg", "jpg")
        return f"images/{self.sha256[:2]}/{self.sha256}.{ext}"


def check_image(data: bytes, *, max_bytes: int, max_pixels: int) -> CheckedImage:
    """Accept `data` only if it is a whole image of an allowed format within the limits, with its
    perceptual hash (`app.leakage.phash`) taken from the decode that checks it."""
    if len(data) > max_bytes:
        raise ImageRejected(f"image is {size_text(len(data))}; the limit is {size_text(max_bytes)}")
    if not data:
        raise ImageRejected("file is empty")
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
                # A JPEG is decoded at the reduced scale the perceptual hash needs: all its data is
                # still read and entropy-decoded (a truncated or damaged file fails just the same).
                img.draft("RGB", leakage.PHASH_DRAFT)
                img.load()
                phash = _phash(img)
        except ImageRejected:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ImageRejected(f"image rejected as a decompression bomb: {exc}") from None
        except Image.UnidentifiedImageError:
            raise ImageRejected("not an image (could not identify the file as PNG, JPEG, WebP or GIF)") from None
        except (OSError, SyntaxError, ValueError) as exc:
            raise ImageRejected(f"image is damaged or truncated: {exc}") from None
    return CheckedImage(hashlib.sha256(data).hexdigest(), ALLOWED_FORMATS[fmt], width, height, len(data), data, phash)


def _phash(image: Image.Image) -> int | None:
    """The decoded image's perceptual hash; None where it cannot be had (an odd mode): the image is
    still imported, and the worker's backfill tries again."""
    try:
        return leakage.phash_of(image)
    except Exception:
        return None


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

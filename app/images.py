"""Image validation on import (decode, size and pixel limits, decompression bombs) and WebP
thumbnails. The perceptual hash is not taken here: the worker's `hash_images` job computes it once
the import is committed (`app.services.leaks.leaks.hash_missing`), so a request never hashes."""

from __future__ import annotations

import hashlib
import io
import warnings
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
    allows."""
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

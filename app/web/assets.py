"""Serving stored images and their WebP thumbnails, with ETags and long cache lifetimes.

Whatever the storage, the access check runs here first. Then the object is streamed from the
storage by this process (any replica can: with S3 nothing is read from local disk), or, with
VLCURATE_S3_PRESIGN_SECONDS set and an https URL, the browser is redirected to a presigned URL that
answers with the same Cache-Control. A redirect carries no ETag of ours: a browser revalidating
it would keep a URL that has expired; it is cached for half the URL's lifetime instead.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import sqlalchemy as sa
from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import RedirectResponse, StreamingResponse
from sqlalchemy.orm import Session

from app.images import make_thumbnail, thumbnail_key
from app.models import Asset
from app.storage import Opened, Storage
from app.web.deps import Db, Principal, page_user

router = APIRouter()
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
CACHE = "private, max-age=31536000, immutable"


def _lookup(session: Session, sha256: str) -> Asset:
    if not SHA_RE.match(sha256):
        raise HTTPException(404, "No such image.")
    asset = session.scalar(sa.select(Asset).where(Asset.sha256 == sha256))
    if asset is None:
        raise HTTPException(404, "No such image.")
    return asset


def storage_keys(session: Session, shas: list[str]) -> dict[str, str]:
    """The storage keys of the distinct `shas`' images; 404 naming those the server does not hold."""
    wanted = list(dict.fromkeys(shas))
    valid = [sha for sha in wanted if SHA_RE.match(sha)]
    found = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(valid))).all()) if valid else {}
    missing = [sha for sha in wanted if sha not in found]
    if missing:
        raise HTTPException(404, f"No such image: {', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else ""))
    return {sha: found[sha] for sha in wanted}


def _not_modified(request: Request, etag: str) -> bool:
    return etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]


def streamed(opened: Opened, media_type: str, headers: dict[str, str]) -> StreamingResponse:
    """A stored object sent as it is read, with its length."""
    return StreamingResponse(opened.chunks(), media_type=media_type, headers={**headers, "Content-Length": str(opened.size)})


def presigned(storage: Storage, key: str, media_type: str, *, image: bool, disposition: str | None = None,
              cache_control: str | None = None) -> RedirectResponse | None:
    """A redirect to the object's presigned URL, or None when the app is to stream it: presigning is
    off, or the URL is plain http and the object is an image (the Content-Security-Policy refuses those)."""
    url = storage.url(key, media_type, disposition=disposition, cache_control=cache_control)
    if url is None or (image and not url.startswith("https://")):
        return None
    ttl = getattr(storage, "presign_seconds", 0) // 2
    return RedirectResponse(url, status_code=307, headers={"Cache-Control": f"private, max-age={ttl}"})


def attachment(filename: str) -> str:
    """A Content-Disposition for a download (RFC 6266, non-ASCII names as RFC 5987 says)."""
    quoted = quote(filename)
    return f"attachment; filename*=utf-8''{quoted}" if quoted != filename else f'attachment; filename="{filename}"'


@router.get("/assets/{sha256}")
def image(request: Request, sha256: str, session: Db, user: Principal = Depends(page_user)):
    asset = _lookup(session, sha256)
    etag = f'"{sha256}"'
    if _not_modified(request, etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE})
    storage = request.app.state.storage
    redirect = presigned(storage, asset.storage_key, asset.mime, image=True, cache_control=CACHE)
    if redirect is not None:
        return redirect
    try:
        opened = storage.open(asset.storage_key)
    except KeyError:
        raise HTTPException(404, "The image is missing from storage.") from None
    return streamed(opened, asset.mime, {"ETag": etag, "Cache-Control": CACHE})


@router.get("/assets/{sha256}/thumb")
def thumbnail(request: Request, sha256: str, session: Db, user: Principal = Depends(page_user)):
    asset = _lookup(session, sha256)
    size = request.app.state.settings.thumbnail_size
    etag = f'"{sha256}-{size}"'
    if _not_modified(request, etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE})
    storage = request.app.state.storage
    key = thumbnail_key(sha256, size)
    # Generated on first request and kept (in the shared storage: by whichever replica asked first;
    # two at once write the same bytes), so each thumbnail is made once.
    redirect = presigned(storage, key, "image/webp", image=True, cache_control=CACHE)
    if redirect is not None and storage.exists(key):
        return redirect
    try:
        data = storage.get(key)
    except KeyError:
        data = make_thumbnail(storage.get(asset.storage_key), size)
        storage.put(key, data, "image/webp")
    return redirect or Response(data, media_type="image/webp", headers={"ETag": etag, "Cache-Control": CACHE})

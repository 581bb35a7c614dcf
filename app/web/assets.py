"""Serving stored images and their WebP thumbnails, with ETags and long cache lifetimes."""

from __future__ import annotations

import re

import sqlalchemy as sa
from fastapi import APIRouter, Depends, HTTPException, Request, Response
from sqlalchemy.orm import Session

from app.images import make_thumbnail, thumbnail_key
from app.models import Asset
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


def _not_modified(request: Request, etag: str) -> bool:
    return etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]


@router.get("/assets/{sha256}")
def image(request: Request, sha256: str, session: Db, user: Principal = Depends(page_user)):
    asset = _lookup(session, sha256)
    etag = f'"{sha256}"'
    if _not_modified(request, etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE})
    data = request.app.state.storage.get(asset.storage_key)
    return Response(data, media_type=asset.mime, headers={"ETag": etag, "Cache-Control": CACHE})


@router.get("/assets/{sha256}/thumb")
def thumbnail(request: Request, sha256: str, session: Db, user: Principal = Depends(page_user)):
    asset = _lookup(session, sha256)
    size = request.app.state.settings.thumbnail_size
    etag = f'"{sha256}-{size}"'
    if _not_modified(request, etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE})
    storage = request.app.state.storage
    key = thumbnail_key(sha256, size)
    # Generated on first request and kept, so each thumbnail is made once.
    try:
        data = storage.get(key)
    except KeyError:
        data = make_thumbnail(storage.get(asset.storage_key), size)
        storage.put(key, data, "image/webp")
    return Response(data, media_type="image/webp", headers={"ETag": etag, "Cache-Control": CACHE})

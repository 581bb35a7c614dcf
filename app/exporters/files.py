"""Writing an export's files: paths kept inside the export, JSON documents written element by
element, stored images read one batch at a time."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets.dataset import JsonStyle
from app.errors import Invalid
from app.models import Asset
from app.storage import Storage


class Output:
    """The files of one export under a local directory, each path checked to stay inside it."""

    def __init__(self, root: Path):
        self.root = root
        self.paths: list[str] = []

    def path(self, relative: str) -> Path:
        rel = PurePosixPath(relative)
        if rel.is_absolute() or any(p in ("", ".", "..") for p in rel.parts):
            raise Invalid(f"An export file name must stay inside the export: {relative!r}")
        target = self.root.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative not in self.paths:
            self.paths.append(relative)
        return target

    def write_bytes(self, relative: str, data: bytes) -> None:
        self.path(relative).write_bytes(data)

    def open_text(self, relative: str):
        return self.path(relative).open("w", encoding="utf-8", newline="\n")

    def digests(self) -> dict[str, dict[str, Any]]:
        out = {}
        for relative in sorted(self.paths):
            digest, size = hashlib.sha256(), 0
            with self.path(relative).open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
            out[relative] = {"sha256": digest.hexdigest(), "bytes": size}
        return out


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class LineArray:
    """A JSON array written element by element: `[`, one compact element per line, `]`."""

    def __init__(self, fh):
        self.fh, self.first = fh, True
        fh.write("[")

    def add(self, value: Any) -> None:
        self.fh.write(("\n" if self.first else ",\n") + dumps(value))
        self.first = False

    def close(self) -> None:
        self.fh.write("\n]\n" if not self.first else "]\n")


class JsonArray:
    """A JSON array written element by element, byte for byte as `json.dump(list, style)` writes it."""

    def __init__(self, fh, style: JsonStyle):
        self.fh, self.style, self.first = fh, style, True
        fh.write("[")

    def add(self, value: Any) -> None:
        self.add_text(self.style.dumps(value, level=1))

    def add_text(self, text: str) -> None:
        """An element already serialised in this style (at depth 1)."""
        indent = self.style.indent
        if indent is None:
            self.fh.write(text if self.first else ", " + text)
        else:
            self.fh.write(("\n" if self.first else ",\n") + " " * indent + text)
        self.first = False

    def close(self) -> None:
        if not self.first and self.style.indent is not None:
            self.fh.write("\n")
        self.fh.write("]" + ("\n" if self.style.final_newline else ""))


@dataclass
class Images:
    """Stored image bytes by sha256, looked up one batch at a time."""

    session: Session
    storage: Storage
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)

    def prefetch(self, shas: set[str]) -> None:
        missing = [s for s in shas if s not in self.keys]
        if missing:
            rows = self.session.execute(sa.select(Asset.sha256, Asset.storage_key, Asset.mime).where(Asset.sha256.in_(missing)))
            self.keys.update({sha: (key, mime) for sha, key, mime in rows})
        if len(self.keys) > 50_000:  # keep the lookup table bounded on huge projects
            self.keys = {s: self.keys[s] for s in shas if s in self.keys}

    def read(self, sha: str) -> tuple[bytes, str]:
        key, mime = self.keys[sha]
        return self.storage.get(key), mime

    def png(self, sha: str) -> bytes:
        """The image as PNG bytes (converted when stored in another format)."""
        data, mime = self.read(sha)
        if mime == "image/png":
            return data
        from PIL import Image

        with Image.open(io.BytesIO(data)) as image:
            out = io.BytesIO()
            image.save(out, format="PNG")
            return out.getvalue()

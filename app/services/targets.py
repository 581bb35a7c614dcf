"""Export targets: where an export may be written (the S3 rule shared by the API, the pages and the CLI)."""

from __future__ import annotations

from pathlib import Path

from app.errors import Invalid


def check_target(target: str | None, *, directories: bool = False) -> str | None:
    """The export target to record: None (this server's data directory, downloadable from it), an
    `s3://bucket/prefix`, or, only with `directories` (the command line, on the server itself), a
    local directory made absolute. Web clients may not name the server's directories."""
    target = (target or "").strip()
    if not target:
        return None
    if target.startswith("s3://"):
        if not target.removeprefix("s3://").split("/")[0]:
            raise Invalid("An S3 target names its bucket: s3://bucket/prefix.")
        return target
    if directories:
        return str(Path(target).resolve())
    raise Invalid("The target is empty (the server's data directory, downloadable here) or s3://bucket/prefix.")

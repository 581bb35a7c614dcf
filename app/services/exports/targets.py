"""Export targets: where an export may be written (the S3 rule shared by the API, the pages and the
CLI), and whether this installation can write there, checked when the export is asked for."""

from __future__ import annotations

import os
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


def check_writable(target: str) -> None:
    """Refuse now a target the worker could not write, rather than fail the job later: an S3
    target with no S3 credentials on this installation, or a directory that can't be created."""
    if target.startswith("s3://"):
        if not has_s3_credentials():
            raise Invalid(f"The export target {target} is on S3, but this server has no S3 credentials. Configure them "
                          "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, an AWS profile or an instance role) "
                          "or leave the target empty to export to this server.")
    elif target.startswith("/"):
        existing = Path(target)
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise Invalid(f"The export target {target} can't be written: {existing} is not a writable directory.")


def has_s3_credentials() -> bool:
    """Whether boto3 finds credentials here (environment, profile, instance role), as the upload would."""
    import boto3

    return boto3.Session().get_credentials() is not None

"""Remote mode of the command line: with --server URL --token T (or VLCURATE_SERVER / VLCURATE_TOKEN),
`project list`, `import`, `suggest --from`, `export`, `agreement`, `bias`, `splits`, `leaks`, `gold import` and
`gold accuracy` go through the Python client and the REST API instead of opening the database, so
they work wherever the server is reachable (and import neither SQLAlchemy nor psycopg). The client
distribution alone has the same commands as `vlcurate-remote` (`vlcurate.cli`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from app.cli.common import _fail

SERVER = typer.Option(None, "--server", envvar="VLCURATE_SERVER", help="A vlcurate server's URL: act through its API, not the database.")
TOKEN = typer.Option(None, "--token", envvar="VLCURATE_TOKEN", help="API token for --server (`vlcurate token create`).")


@contextmanager
def client(server: Optional[str], token: Optional[str]) -> Iterator[Any]:
    """The client of `server`, with the server's refusals printed as the local commands print theirs."""
    from vlcurate import Client, VlcurateError

    if not token:
        _fail("--server needs an API token: --token or VLCURATE_TOKEN.")
    try:
        with Client(server, token) as remote:
            yield remote
    except VlcurateError as exc:
        _fail(exc.message, exc.errors)


def read_records(file: Path) -> Iterator[str | dict[str, Any]]:
    """A records file for a remote import: JSONL lines go as they are (every character of a record is
    kept); a JSON array's elements are sent re-serialized. CSV is parsed by the server only."""
    suffix = file.suffix.lower()
    if suffix == ".csv":
        _fail("A remote import takes JSONL or a JSON array (CSV is read by the server: import it there).")
    with file.open(encoding="utf-8-sig") as fh:
        head = fh.read(1 << 16).lstrip()
        fh.seek(0)
        if head.startswith("["):
            try:
                yield from json.load(fh)
            except json.JSONDecodeError as exc:
                _fail(f"{file.name} is not valid JSON: line {exc.lineno}: {exc.msg}")
            return
        for line in fh:
            if line.strip():
                yield line.rstrip("\n")


def suggestion_rows(file: Path) -> Iterator[dict[str, Any]]:
    """Suggestions from a JSONL file: {"external_id", "kind", "payload", "score"?, "model"?, "model_version"?} a line."""
    with file.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                _fail(f"{file.name} line {n}: not valid JSON: {exc.msg}")
            if not isinstance(row, dict):
                _fail(f"{file.name} line {n}: a suggestion is a JSON object.")
            yield row

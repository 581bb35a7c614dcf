"""Reading import files: JSONL, a JSON array (or an object of records keyed by id), or CSV, record by
record, each with its JSON text exactly as the file has it (what `items.source` keeps).

Hand-written slicing because `json` gives values, not their text: `JSONDecoder.raw_decode` parses
each element in place, so the text between its start and end is the element as written.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from app.errors import Invalid


def _csv_cell(value: str) -> Any:
    text = value.strip()
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value


def parse_records(data: bytes, filename: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Yield (where, record, source) triples: `where` names the line or record for error
    messages, `source` is the record's JSON text exactly as the file has it (a CSV row, which
    has none, as JSON of its cells in column order)."""
    suffix = PurePosixPath(filename).suffix.lower()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Invalid(f"{filename} is not UTF-8 text (byte {exc.start}).") from None
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise Invalid(f"{filename}: the CSV file has no header row.")
        for row in reader:
            if None in row:
                raise Invalid(f"line {reader.line_num}: more cells than header columns.")
            cells = {k: v for k, v in row.items() if v not in ("", None)}
            yield f"line {reader.line_num}", {k: _csv_cell(v) for k, v in cells.items()}, json.dumps(cells, ensure_ascii=False)
        return
    stripped = text.lstrip()
    if suffix == ".json" or (suffix not in (".jsonl", ".ndjson") and stripped.startswith("[")):
        try:
            members = list(_json_records(text))
        except json.JSONDecodeError as exc:
            raise Invalid(f"{filename}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
        except Invalid as exc:
            raise Invalid(f"{filename}: {exc.message}") from None
        for i, (key, rec, source) in enumerate(members, 1):
            if not isinstance(rec, dict):
                raise Invalid(f"record {i}: a record is a JSON object.")
            if key is not None and "id" not in rec:
                rec = {"id": key, **rec}  # an object of records keyed by id (as some published files are)
            yield f"record {i}", rec, source
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
        if not isinstance(rec, dict):
            raise Invalid(f"line {lineno}: a record is a JSON object.")
        yield f"line {lineno}", rec, line.strip()


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _json_records(text: str) -> Iterator[tuple[str | None, Any, str]]:
    """The records of a JSON document with each one's exact text: the elements of an array, the
    members of an object keyed by id, or the array under "records". (key or None, value, text)."""
    doc = json.loads(text)  # a precise error for a malformed document; records are sliced below
    pos = _SPACE.match(text, 0).end()
    if isinstance(doc, dict):
        members = {key: (value, start) for key, value, start, _ in _object_members(text, pos)}
        if isinstance(doc.get("records"), list):
            yield from ((None, value, source) for value, source in _array_elements(text, members["records"][1]))
        elif doc and all(isinstance(v, dict) for v in doc.values()):
            yield from ((key, value, text[start:end]) for key, value, start, end in _object_members(text, pos))
        else:
            raise Invalid("a JSON import is an array of records.")
    elif isinstance(doc, list):
        yield from ((None, value, source) for value, source in _array_elements(text, pos))
    else:
        raise Invalid("a JSON import is an array of records.")


def _array_elements(text: str, pos: int) -> Iterator[tuple[Any, str]]:
    """(value, exact text) of each element of the (valid) array starting at text[pos] == "["."""
    pos = _SPACE.match(text, pos + 1).end()
    if text.startswith("]", pos):
        return
    while True:
        value, end = _DECODER.raw_decode(text, pos)
        yield value, text[pos:end]
        pos = _SPACE.match(text, end).end()
        if text.startswith("]", pos):
            return
        pos = _SPACE.match(text, pos + 1).end()  # past the comma


def _object_members(text: str, pos: int) -> Iterator[tuple[str, Any, int, int]]:
    """(key, value, start, end of the value's text) of each member of the (valid) object at text[pos] == "{"."""
    pos = _SPACE.match(text, pos + 1).end()
    while not text.startswith("}", pos):
        key, end = _DECODER.raw_decode(text, pos)
        pos = _SPACE.match(text, _SPACE.match(text, end).end() + 1).end()  # past the colon
        value, end = _DECODER.raw_decode(text, pos)
        yield key, value, pos, end
        pos = _SPACE.match(text, end).end()
        if text.startswith(",", pos):
            pos = _SPACE.match(text, pos + 1).end()

"""Reading import files: JSONL, a JSON array (or an object of records keyed by id), or CSV, record by
record, each with its JSON text exactly as the file has it (what `items.source` keeps).

Hand-written slicing because `json` gives values, not their text: `JSONDecoder.raw_decode` parses
each element in place, so the text between its start and end is the element as written.

Every record's text (a JSONL line, an array element, a CSV row and each JSON cell of it) is held to
`max_json_bytes` and `max_json_depth` before it is parsed (`app.jsontext`), and the message names
the line or record.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from app import jsontext
from app.errors import Invalid

# Defaults of the settings `max_json_bytes` and `max_json_depth`.
MAX_JSON_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64


def _csv_cell(value: str, where: str, column: str, max_depth: int) -> Any:
    text = value.strip()
    if text[:1] in "[{":
        if (why := jsontext.depth_problem(text, max_depth)) is not None:
            raise Invalid(f"{where}: column '{column}': {why}.")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value


def _check(text: str, where: str, max_bytes: int, max_depth: int) -> None:
    if (why := jsontext.problem(text, max_bytes=max_bytes, max_depth=max_depth)) is not None:
        raise Invalid(f"{where}: {why}.")


def parse_records(
    data: bytes, filename: str, *, max_json_bytes: int = MAX_JSON_BYTES, max_json_depth: int = MAX_JSON_DEPTH
) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Yield (where, record, source) triples: `where` names the line or record for error
    messages, `source` is the record's JSON text exactly as the file has it (a CSV row, which
    has none, as JSON of its cells in column order)."""
    suffix = PurePosixPath(filename).suffix.lower()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Invalid(f"{filename} is not UTF-8 text (byte {exc.start}).") from None
    if suffix == ".csv":
        yield from _csv_records(text, filename, max_json_bytes, max_json_depth)
        return
    stripped = text.lstrip()
    if suffix == ".json" or (suffix not in (".jsonl", ".ndjson") and stripped.startswith("[")):
        try:
            members = list(_json_records(text))
        except json.JSONDecodeError as exc:
            raise Invalid(f"{filename}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
        except RecursionError:
            # The document as a whole holds the records one level down.
            at = jsontext.too_deep_at(text, max_json_depth + 1) or 0
            raise Invalid(
                f"{filename}: line {jsontext.line_of(text, at)}: arrays and objects nested deeper than "
                f"{max_json_depth} levels (VLCURATE_MAX_JSON_DEPTH)."
            ) from None
        except Invalid as exc:
            raise Invalid(f"{filename}: {exc.message}") from None
        for i, (key, rec, source) in enumerate(members, 1):
            _check(source, f"record {i}", max_json_bytes, max_json_depth)
            if not isinstance(rec, dict):
                raise Invalid(f"record {i}: a record is a JSON object.")
            if key is not None and "id" not in rec:
                rec = {"id": key, **rec}  # an object of records keyed by id (as some published files are)
            yield f"record {i}", rec, source
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        _check(line, f"line {lineno}", max_json_bytes, max_json_depth)
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
        if not isinstance(rec, dict):
            raise Invalid(f"line {lineno}: a record is a JSON object.")
        yield f"line {lineno}", rec, line.strip()


def _csv_records(text: str, filename: str, max_bytes: int, max_depth: int) -> Iterator[tuple[str, dict[str, Any], str]]:
    # The csv module's cell limit is one value for the whole process; every import sets the same.
    csv.field_size_limit(max_bytes)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        if not reader.fieldnames:
            raise Invalid(f"{filename}: the CSV file has no header row.")
        for row in reader:
            where = f"line {reader.line_num}"
            if None in row:
                raise Invalid(f"{where}: more cells than header columns.")
            cells = {k: v for k, v in row.items() if v not in ("", None)}
            source = json.dumps(cells, ensure_ascii=False)
            if (why := jsontext.size_problem(source, max_bytes) or jsontext.nul_problem(source)) is not None:
                raise Invalid(f"{where}: {why}.")
            yield where, {k: _csv_cell(v, where, k, max_depth) for k, v in cells.items()}, source
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise Invalid(
                f"line {reader.line_num + 1}: a cell is larger than {max_bytes:,} bytes (VLCURATE_MAX_JSON_BYTES)."
            ) from None
        raise Invalid(f"line {reader.line_num}: not valid CSV ({exc}).") from None


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

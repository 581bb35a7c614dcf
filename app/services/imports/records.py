"""Reading import files as they stream: JSONL, a JSON array (or an object of records keyed by id, or
the array under "records"), or CSV, record by record, each with its JSON text exactly as the file has
it (what `items.source` keeps). At most one record and one read chunk are in memory at a time, so
memory does not grow with the file.

Hand-written slicing because streaming JSON parsers (`ijson`), like `json`, give values, not their
text: `JSONDecoder.raw_decode` parses each element in place in a window of the file (`_Window`),
so the text between its start and end is the element as written; the window reads on when an
element runs past what has been read, and drops what has been parsed.

Every record's text (a JSONL line, an array element, a CSV row and each JSON cell of it) is held to
`max_json_bytes` and `max_json_depth` before it is parsed (`app.jsontext`), its numbers checked as it
is parsed (no NaN, Infinity, float beyond range or integer past `jsontext.MAX_INT_DIGITS`), and the
message names the line or record and the field. The file must be seekable (a file on disk, an
upload's spool file, bytes in `io.BytesIO`): the format is told from its first character, and an object's members are looked
over once before their records are read.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from app import jsontext
from app.errors import Invalid

# Defaults of the settings `max_json_bytes` and `max_json_depth`.
MAX_JSON_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64
CHUNK = 1024 * 1024

Record = tuple[str, dict[str, Any], str]


def _csv_cell(value: str, where: str, column: str, max_depth: int) -> Any:
    text = value.strip()
    if text[:1] in "[{":
        if (why := jsontext.depth_problem(text, max_depth)) is not None:
            raise Invalid(f"{where}: column '{column}': {why}.")
        try:
            return jsontext.loads(text)
        except jsontext.NumberRefused as exc:
            raise Invalid(f"{where}: {jsontext.NumberRefused((column, *exc.path), exc.why)}.") from None
        except json.JSONDecodeError:
            return value
    return value


def _check(text: str, where: str, max_bytes: int, max_depth: int) -> None:
    if (why := jsontext.problem(text, max_bytes=max_bytes, max_depth=max_depth)) is not None:
        raise Invalid(f"{where}: {why}.")


def _too_large(where: str, size: str, max_bytes: int) -> Invalid:
    return Invalid(f"{where}: {size} bytes of JSON; the limit is {max_bytes:,} (VLCURATE_MAX_JSON_BYTES).")


def parse_records(
    file: BinaryIO, filename: str, *, max_json_bytes: int = MAX_JSON_BYTES, max_json_depth: int = MAX_JSON_DEPTH
) -> Iterator[Record]:
    """Yield (where, record, source) triples from the file as it is read: `where` names the line
    or record for error messages, `source` is the record's JSON text exactly as the file has it (a
    CSV row, which has none, as JSON of its cells in column order). A problem with the file itself
    (not JSON, too deep, too large) raises Invalid when the reading gets there."""
    suffix = PurePosixPath(filename).suffix.lower()
    if suffix == ".csv":
        yield from _csv_records(file, filename, max_json_bytes, max_json_depth)
    elif suffix == ".json" or (suffix not in (".jsonl", ".ndjson") and _first_character(file) == b"["):
        yield from _json_records(file, filename, max_json_bytes, max_json_depth)
    else:
        yield from _jsonl_records(file, filename, max_json_bytes, max_json_depth)


def _first_character(file: BinaryIO) -> bytes:
    """The file's first byte past a byte order mark and whitespace; the file is left where it was."""
    start = file.tell()
    head = file.read(CHUNK).removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n")
    while not head and (more := file.read(CHUNK)):
        head = more.lstrip(b" \t\r\n")
    file.seek(start)
    return head[:1]


def _jsonl_records(file: BinaryIO, filename: str, max_bytes: int, max_depth: int) -> Iterator[Record]:
    offset, lineno = 0, 0
    while raw := file.readline(max_bytes + 3):  # a line at the limit, "\r\n", and one byte more
        lineno += 1
        if len(raw) == max_bytes + 3 and not raw.endswith(b"\n"):
            size = len(raw)  # read the rest of the line only to say how large it is
            while not raw.endswith(b"\n") and (raw := file.readline(CHUNK)):
                size += len(raw)
            size -= len(raw) - len(raw.rstrip(b"\r\n"))
            raise _too_large(f"line {lineno}", f"{size:,}", max_bytes)
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw, offset = raw[3:], 3
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Invalid(f"{filename} is not UTF-8 text (line {lineno}, byte {offset + exc.start}).") from None
        offset += len(raw)
        source = text.strip()
        if not source:
            continue
        _check(source, f"line {lineno}", max_bytes, max_depth)
        try:
            rec = jsontext.loads(text.rstrip("\r\n"))  # columns of the line as it is, without its ending
        except jsontext.NumberRefused as exc:
            raise Invalid(f"line {lineno}: {exc}.") from None
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
        if not isinstance(rec, dict):
            raise Invalid(f"line {lineno}: a record is a JSON object.")
        yield f"line {lineno}", rec, source


def _csv_records(file: BinaryIO, filename: str, max_bytes: int, max_depth: int) -> Iterator[Record]:
    # The csv module's cell limit is one value for the whole process; every import sets the same.
    csv.field_size_limit(max_bytes)
    text = io.TextIOWrapper(file, encoding="utf-8-sig", newline="")
    reader = csv.DictReader(text)
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
    except UnicodeDecodeError:
        raise Invalid(f"{filename} is not UTF-8 text (after line {reader.line_num}).") from None
    finally:
        text.detach()  # the caller's file stays open


# -- JSON documents ----------------------------------------------------------------------------

_SPACE = re.compile(r"[ \t\n\r]*")


def _json_records(file: BinaryIO, filename: str, max_bytes: int, max_depth: int) -> Iterator[Record]:
    """The records of a JSON document with each one's exact text: the elements of an array, the
    members of an object keyed by id, or the elements of the array under "records"."""
    start = file.tell()
    doc = _Window(file, filename, max_bytes, max_depth)
    first = doc.skip()
    if first == "[":
        yield from _checked(doc.elements(), max_bytes, max_depth)
    elif first == "{":
        file.seek(start)
        keyed = _keyed(_Window(file, filename, max_bytes, max_depth))
        file.seek(start)
        doc = _Window(file, filename, max_bytes, max_depth)
        doc.skip()
        yield from _checked(_keyed_records(doc) if keyed else _records_member(doc), max_bytes, max_depth)
    else:
        doc.value("the document")
        raise Invalid(f"{filename}: a JSON import is an array of records.")
    doc.end()


def _checked(members: Iterator[tuple[str | None, Any, str]], max_bytes: int, max_depth: int) -> Iterator[Record]:
    for i, (key, rec, source) in enumerate(members, 1):
        _check(source, f"record {i}", max_bytes, max_depth)
        if not isinstance(rec, dict):
            raise Invalid(f"record {i}: a record is a JSON object.")
        if key is not None and "id" not in rec:
            rec = {"id": key, **rec}  # an object of records keyed by id (as some published files are)
        yield f"record {i}", rec, source


def _keyed(doc: _Window) -> bool:
    """Whether the object at the window's start holds records keyed by id (every member an object,
    none of them a "records" array); False when it holds its records under "records"."""
    doc.skip()
    count = 0
    dicts = True
    for key in doc.members():
        count += 1
        if key == "records" and doc.skip() == "[":
            return False
        value, _ = doc.value(f"record {count}")
        dicts = dicts and isinstance(value, dict)
    if count and dicts:
        return True
    raise Invalid(f"{doc.filename}: a JSON import is an array of records.")


def _keyed_records(doc: _Window) -> Iterator[tuple[str | None, Any, str]]:
    for i, key in enumerate(doc.members(), 1):
        yield key, *doc.value(f"record {i}")


def _records_member(doc: _Window) -> Iterator[tuple[str | None, Any, str]]:
    done = False
    for key in doc.members():
        if key == "records" and not done and doc.skip() == "[":
            yield from doc.elements()
            done = True
        else:
            doc.value(f"member '{key}'")


class _Window:
    """A JSON document read a chunk at a time. `value()` parses the value at the read position in
    place, reading on while the value runs past what has been read; what lies before the read
    position is dropped when more is read. Positions in messages count from the file's start."""

    def __init__(self, file: BinaryIO, filename: str, max_bytes: int, max_depth: int):
        self.file, self.filename, self.max_bytes, self.max_depth = file, filename, max_bytes, max_depth
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # bytes read before the current chunk
        self.line, self.column = 1, 0  # where text[0] is in the file (column counted from 0)

    def more(self) -> bool:
        """Read the next chunk; False at the end of the file."""
        if self.eof:
            return False
        chunk = self.file.read(CHUNK)
        try:
            new = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise Invalid(f"{self.filename} is not UTF-8 text (byte {self.consumed + exc.start}).") from None
        self.consumed += len(chunk)
        self.eof = not chunk
        dropped = self.text[: self.pos]
        if (lines := dropped.count("\n")) > 0:
            self.line += lines
            self.column = len(dropped) - dropped.rfind("\n") - 1
        else:
            self.column += len(dropped)
        self.text = self.text[self.pos :] + new
        self.pos = 0
        return True

    def where(self, pos: int) -> tuple[int, int]:
        """(line, column) of text[pos] in the file, both counted from 1."""
        newline = self.text.rfind("\n", 0, pos)
        if newline < 0:
            return self.line, self.column + pos + 1
        return self.line + self.text.count("\n", 0, pos), pos - newline

    def invalid(self, msg: str, pos: int | None = None) -> Invalid:
        line, column = self.where(self.pos if pos is None else pos)
        return Invalid(f"{self.filename}: not valid JSON (line {line}, column {column}: {msg}).")

    def skip(self) -> str:
        """Move past whitespace; the next character, or "" at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def value(self, where: str) -> tuple[Any, str]:
        """The value at the read position and its exact text; `where` names it in messages."""
        self.skip()
        while True:
            try:
                value, end = jsontext.raw_decode(self.text, self.pos)
            except jsontext.NumberRefused as exc:
                raise Invalid(f"{where}: {exc}.") from None
            except json.JSONDecodeError as exc:
                # A value cut off where the read text ends fails at (or, for a string, from) the end.
                cut = exc.pos >= len(self.text) - 16 or exc.msg.startswith("Unterminated string") or "uXXXX" in exc.msg
                if self.eof or not cut:
                    raise self.invalid(exc.msg, exc.pos) from None
                self._read_on(where)
                continue
            except RecursionError:
                at = self.pos + (jsontext.too_deep_at(self.text[self.pos :], self.max_depth) or 0)
                raise Invalid(
                    f"{self.filename}: line {self.where(at)[0]}: arrays and objects nested deeper than "
                    f"{self.max_depth} levels (VLCURATE_MAX_JSON_DEPTH)."
                ) from None
            if end < len(self.text) or self.eof:  # a number at the end of the read text may go on
                text, self.pos = self.text[self.pos : end], end
                return value, text
            self._read_on(where)

    def _read_on(self, where: str) -> None:
        if len(self.text) - self.pos > self.max_bytes:  # more characters than bytes allowed
            raise _too_large(where, "more than " + f"{self.max_bytes:,}", self.max_bytes)
        self.more()

    def elements(self) -> Iterator[tuple[None, Any, str]]:
        """(None, value, text) of each element of the array at the read position."""
        self.pos += 1
        if self.skip() == "]":
            self.pos += 1
            return
        for i in itertools.count(1):
            yield None, *self.value(f"record {i}")
            if self._after_member("]"):
                return

    def members(self) -> Iterator[str]:
        """The key of each member of the object at the read position; the caller reads each value."""
        self.pos += 1
        if self.skip() == "}":
            self.pos += 1
            return
        while True:
            if self.skip() != '"':
                raise self.invalid("Expecting property name enclosed in double quotes")
            key, _ = self.value("a key")
            if self.skip() != ":":
                raise self.invalid("Expecting ':' delimiter")
            self.pos += 1
            yield key
            if self._after_member("}"):
                return

    def _after_member(self, close: str) -> bool:
        """Move past the comma after a member (False) or the closing bracket (True)."""
        c = self.skip()
        self.pos += 1
        if c == close:
            return True
        if c != ",":
            self.pos -= 1
            raise self.invalid("Expecting ',' delimiter")
        return False

    def end(self) -> None:
        if self.skip():
            raise self.invalid("Extra data")

"""Reading import files as they stream: every record with its exact text, whatever the read chunks
cut through, read lazily, and problems named by line or record."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import Invalid
from app.services.imports import records
from app.services.imports.records import parse_records


def read(data: bytes | str, filename: str = "x.json", **limits) -> list[tuple[str, dict, str]]:
    body = data.encode() if isinstance(data, str) else data
    return list(parse_records(io.BytesIO(body), filename, **limits))


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Read a few bytes at a time, so that chunks cut through keys, strings, escapes and numbers."""
    monkeypatch.setattr(records, "CHUNK", 7)


chars = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")  # what PostgreSQL can hold
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(chars, max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(chars, max_size=5), inner, max_size=3),
    max_leaves=8,
)
record_lists = st.lists(st.dictionaries(st.text(chars, max_size=6), values, max_size=4), max_size=6)


@settings(max_examples=60, deadline=None)
@given(recs=record_lists, indent=st.sampled_from([None, 0, 2, "\t"]), ascii=st.booleans(), chunk=st.integers(1, 40))
def test_array_elements_keep_their_text_whatever_the_chunks(recs, indent, ascii, chunk):
    texts = [json.dumps(r, indent=indent, ensure_ascii=ascii) for r in recs]
    document = "[\n " + " ,\n  ".join(texts) + "\n]\n"
    original = records.CHUNK
    records.CHUNK = chunk
    try:
        got = read(document)
    finally:
        records.CHUNK = original
    assert [source for _, _, source in got] == texts
    assert [rec for _, rec, _ in got] == [json.loads(t) for t in texts]
    assert [where for where, _, _ in got] == [f"record {i}" for i in range(1, len(recs) + 1)]


def test_objects_keyed_by_id_and_records_under_a_key_stream_too(tiny_chunks):
    keyed = '{"d" : {"image": "a.png"} , "e":{"image":"a.png","q":"é \\u00e9"}}'
    assert [(rec["id"], source) for _, rec, source in read(keyed)] == [
        ("d", '{"image": "a.png"}'),
        ("e", '{"image":"a.png","q":"é \\u00e9"}'),
    ]
    wrapped = '{"version": {"n": 1}, "records": [{"id": "a"}, {"id": 12.50}], "after": [1, 2]}'
    assert [source for _, _, source in read(wrapped)] == ['{"id": "a"}', '{"id": 12.50}']
    with pytest.raises(Invalid, match="a JSON import is an array of records"):
        read('{"a": {"id": 1}, "b": 2}')


@pytest.mark.parametrize(
    "document,message",
    [
        ('[{"id": "a"},\n {"id": "b"}\n {"id": "c"}]', r"line 3, column 2: Expecting ',' delimiter"),
        ('[{"id": "a"},\n  {"id": oops}]', r"line 2, column 10: Expecting value"),
        ('[{"id": "a"},\n {"id": "b"', r"line 2, column \d+: Expecting ',' delimiter"),
        ('[{"id": "a"}] [', r"line 1, column 15: Extra data"),
        ("", r"line 1, column 1: Expecting value"),
    ],
)
def test_malformed_documents_name_the_line_and_column(tiny_chunks, document, message):
    with pytest.raises(Invalid, match=r"x\.json: not valid JSON \(" + message):
        read(document)


def test_a_deep_element_names_its_line_and_a_large_one_its_record(tiny_chunks):
    deep = '[{"id": "a"},\n\n{"id": "b", "x": ' + "[" * 5000 + "]" * 5000 + "}]"
    with pytest.raises(Invalid, match=r"line 3: arrays and objects nested deeper than 64 levels"):
        read(deep)
    large = json.dumps([{"id": "a"}, {"id": "b", "q": "x" * 3000}])
    with pytest.raises(Invalid, match=r"record 2: more than 1,000 bytes of JSON; the limit is 1,000"):
        read(large, max_json_bytes=1000)


HUGE = "9" * 5001


@pytest.mark.parametrize(
    "bad, says",
    [("NaN", "NaN is not a number JSON allows"), ("-Infinity", "-Infinity is not a number JSON allows"),
     ("1e400", "1e400 is beyond the largest number (about 1.8e308)"), (HUGE, "an integer of 5,001 digits; the limit is 4,300")],
)
def test_numbers_json_does_not_allow_name_the_line_or_record_and_the_field(tiny_chunks, bad, says):
    """In a JSONL line, an array element read in tiny chunks, an object keyed by id, a CSV cell of JSON."""
    cases = [
        ('{"id": "a"}\n{"id": "b", "box": {"w": [1, ' + bad + "]}}\n", "x.jsonl", "line 2: field 'box.w.1'"),
        ('[{"id": "a"},\n {"id": ' + bad + "}]", "x.json", "record 2: field 'id'"),
        ('{"a": {"q": 1}, "b": {"q": ' + bad + "}}", "x.json", "record 2: field 'q'"),
        ("id,boxes\na,[1]\nb,\"[1, " + bad + ']"\n', "x.csv", "line 3: field 'boxes.1'"),
    ]
    for document, filename, where in cases:
        with pytest.raises(Invalid) as refused:
            read(document, filename)
        assert refused.value.message == f"{where}: {says}.", filename


def test_a_jsonl_line_over_the_limit_is_measured_without_being_held():
    line = b'{"id": "b", "q": "' + b"x" * 5000 + b'"}'
    with pytest.raises(Invalid, match=rf"^line 2: {len(line):,} bytes of JSON; the limit is 1,000 "):
        read(b'{"id": "a"}\n' + line + b'\r\n{"id": "c"}\n', "x.jsonl", max_json_bytes=1000)


def test_text_that_is_not_utf8_is_named():
    with pytest.raises(Invalid, match=r"x\.jsonl is not UTF-8 text \(line 2, byte 20\)"):
        read(b'{"id": "a"}\n{"id": "\xff"}\n', "x.jsonl")
    with pytest.raises(Invalid, match=r"x\.json is not UTF-8 text \(byte 10\)"):
        read(b'[{"id": "a\xff"}]')


def test_a_byte_order_mark_and_the_format_told_from_the_first_character():
    assert read(b'\xef\xbb\xbf{"id": "a"}\n', "x.jsonl")[0][2] == '{"id": "a"}'
    assert read(b'\xef\xbb\xbf \n [{"id": "a"}]', "x.txt")[0][:2] == ("record 1", {"id": "a"})
    assert read(b'{"id": "a"}\n{"id": "b"}', "x.txt")[1][0] == "line 2"


class Reads(io.BytesIO):
    """Bytes that remember how far they have been read."""

    furthest = 0

    def read(self, size=-1):
        out = super().read(size)
        self.furthest = max(self.furthest, self.tell())
        return out

    def read1(self, size=-1):
        out = super().read1(size)
        self.furthest = max(self.furthest, self.tell())
        return out

    def readline(self, size=-1):
        out = super().readline(size)
        self.furthest = max(self.furthest, self.tell())
        return out


@pytest.mark.parametrize("filename", ["x.jsonl", "x.json", "x.csv"])
def test_the_first_record_comes_before_the_file_is_read(filename, monkeypatch):
    monkeypatch.setattr(records, "CHUNK", 64 * 1024)
    n = 20_000
    rows = [{"id": f"r{i}", "image": "a.png"} for i in range(n)]
    if filename == "x.jsonl":
        body = "\n".join(map(json.dumps, rows))
    elif filename == "x.json":
        body = json.dumps(rows)
    else:
        body = "id,image\n" + "".join(f"{r['id']},{r['image']}\n" for r in rows)
    file = Reads(body.encode())
    stream = parse_records(file, filename)
    assert next(stream)[1]["id"] == "r0"
    assert file.furthest <= records.CHUNK < len(body) / 2
    assert sum(1 for _ in stream) == n - 1

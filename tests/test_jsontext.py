"""Strict JSON numbers (app.jsontext.loads / raw_decode): what json.loads gives for JSON as the standard
has it, and NaN, Infinity, floats beyond range and over-long integers refused with where they are."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import jsontext

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
BAD = ["NaN", "Infinity", "-Infinity", "1e400", "-1.5e309", "9" * 400 + ".0", "1" * (jsontext.MAX_INT_DIGITS + 1),
       "-" + "1" * (jsontext.MAX_INT_DIGITS + 1)]


@settings(max_examples=150, deadline=None)
@given(value=values)
def test_standard_json_parses_as_json_loads_has_it(value):
    text = json.dumps(value)
    assert jsontext.loads(text) == json.loads(text)
    assert jsontext.raw_decode(" " + text + " ]", 1) == json.JSONDecoder().raw_decode(" " + text + " ]", 1)


def test_the_longest_integer_allowed_parses():
    text = "7" * jsontext.MAX_INT_DIGITS
    assert jsontext.loads(f'{{"n": -{text}}}') == {"n": -int(text)}


@settings(max_examples=100, deadline=None)
@given(value=values, bad=st.sampled_from(BAD), data=st.data())
def test_a_bad_number_anywhere_is_refused_with_its_path(value, bad, data):
    """The bad number put in place of one value of a random document: refused, naming that value's path."""
    path: tuple = ()
    node = value
    while isinstance(node, (list, dict)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(range(len(node)) if isinstance(node, list) else list(node)))
        path, node = (*path, key), node[key]
    marker = "\x01marker\x01"
    if path:
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = marker
    else:
        value = marker
    text = json.dumps(value).replace(json.dumps(marker), bad)
    with pytest.raises(jsontext.NumberRefused) as refused:
        jsontext.loads(text)
    assert refused.value.path == path


@pytest.mark.parametrize(
    "text, path, says",
    [
        ('{"payload": {"choice": NaN}}', ("payload", "choice"), "NaN is not a number JSON allows"),
        ('[1, {"a": [2, -Infinity]}]', (1, "a", 1), "-Infinity is not a number JSON allows"),
        ('{"id": 1e400}', ("id",), "1e400 is beyond the largest number"),
        ('{"x": {"n": ' + "9" * 5001 + "}}", ("x", "n"), "an integer of 5,001 digits; the limit is 4,300"),
        ('{"a": NaN, "a": 1}', ("a",), "NaN"),  # a repeated key's earlier value is refused too
        ("Infinity", (), "Infinity is not a number JSON allows"),
    ],
)
def test_the_refusal_says_what_and_where(text, path, says):
    with pytest.raises(jsontext.NumberRefused) as refused:
        jsontext.loads(text)
    assert refused.value.path == path and says in refused.value.why
    assert str(refused.value) == (f"field '{'.'.join(map(str, path))}': {refused.value.why}" if path else refused.value.why)


def test_syntax_errors_are_still_json_decode_errors():
    with pytest.raises(json.JSONDecodeError):
        jsontext.loads('{"a": nan}')

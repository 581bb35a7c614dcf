"""Limits on JSON text from outside (imported records, API request bodies, JSON typed into forms):
size and nesting depth, checked on the text before it is parsed, and numbers, checked as it is parsed.

Python's parser gives up with a RecursionError somewhere past 1,000 levels and PostgreSQL refuses
deep JSONB too; neither says where. Checking the text first turns both into a message that names
the place, and keeps records to what the screens and exports are built for.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# A string is skipped whole (brackets inside it don't count); every bracket outside one is a token.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def too_deep_at(text: str, max_depth: int) -> int | None:
    """The position in `text` where its arrays and objects nest deeper than `max_depth`, or None."""
    if text.count("[") + text.count("{") <= max_depth:
        return None  # cannot be deeper than it has brackets: the usual case costs two counts
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def size_problem(text: str, max_bytes: int) -> str | None:
    """Why `text` is too large, or None."""
    if len(text) * 4 <= max_bytes:
        return None  # UTF-8 takes at most 4 bytes a character
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"{size:,} bytes of JSON; the limit is {max_bytes:,} (VLCURATE_MAX_JSON_BYTES)"
    return None


def depth_problem(text: str, max_depth: int) -> str | None:
    """Why `text` nests too deep, or None."""
    if too_deep_at(text, max_depth) is None:
        return None
    return f"arrays and objects nested deeper than {max_depth} levels (VLCURATE_MAX_JSON_DEPTH)"


# \u0000 after an even number of backslashes (an odd number would make it the text "\u0000").
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def nul_problem(text: str) -> str | None:
    """Why `text` cannot be stored: PostgreSQL's text and JSONB hold no NUL character (U+0000)."""
    if "\x00" in text or ("\\u0000" in text and _NUL_ESCAPE.search(text)):
        return "a NUL character (\\u0000), which cannot be stored"
    return None


def problem(text: str, *, max_bytes: int, max_depth: int) -> str | None:
    """Why `text` is refused before parsing (too large, too deep, or holding a NUL), or None."""
    return size_problem(text, max_bytes) or depth_problem(text, max_depth) or nul_problem(text)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# -- numbers ------------------------------------------------------------------------------------
#
# Python's parser takes NaN, Infinity and -Infinity, which JSON has not (PostgreSQL refuses them in
# JSONB), reads 1e400 as inf, and gives up on an integer of more than 4,300 digits with a bare
# ValueError. `loads` and `raw_decode` refuse all of these with `NumberRefused`, naming where the
# number is; the values they return are what `json.loads` returns, and a caller keeps the text.

MAX_INT_DIGITS = 4300  # Python's default limit on reading an integer from text (sys.int_info)


class NumberRefused(ValueError):
    """A number JSON text may not hold: `path` is where it is (keys and indices), `why` says what is wrong."""

    def __init__(self, path: tuple[str | int, ...], why: str):
        super().__init__(f"field '{'.'.join(str(p) for p in path)}': {why}" if path else why)
        self.path, self.why = path, why


def _refuse(text: str) -> Any:
    raise ValueError(text)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(text)
    return value


# The fast path: the C scanner calls back only for NaN / Infinity and for numbers with a fraction or
# an exponent; an integer past Python's limit raises ValueError by itself.
_STRICT = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite)


def loads(text: str) -> Any:
    """`json.loads`, refusing NaN, Infinity, numbers beyond a float and integers of more than
    MAX_INT_DIGITS digits (NumberRefused). Syntax errors raise json.JSONDecodeError as before."""
    try:
        return _STRICT.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        raise _located(text, 0) from None


def raw_decode(text: str, pos: int) -> tuple[Any, int]:
    """`json.JSONDecoder().raw_decode(text, pos)` with the numbers of `loads`."""
    try:
        return _STRICT.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except ValueError:
        raise _located(text, pos) from None


class _Bad:
    def __init__(self, why: str):
        self.why = why


class _Pairs(list):
    """An object's members as (key, value) pairs, so that a repeated key's earlier value is seen too."""


def _bad_constant(text: str) -> _Bad:
    return _Bad(f"{text} is not a number JSON allows")


def _bad_float(text: str) -> float | _Bad:
    value = float(text)
    return _Bad(f"{_short(text)} is beyond the largest number (about 1.8e308)") if math.isinf(value) else value


def _bad_int(text: str) -> int | _Bad:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Bad(f"an integer of {digits:,} digits; the limit is {MAX_INT_DIGITS:,}")
    return int(text)


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:10]}…{text[-10:]}"


_LOCATING = json.JSONDecoder(parse_constant=_bad_constant, parse_float=_bad_float, parse_int=_bad_int, object_pairs_hook=_Pairs)


def _located(text: str, pos: int) -> NumberRefused:
    """Where the strict parse gave up: parsed again (only on refusal) with the bad numbers marked."""
    value, _ = _LOCATING.raw_decode(text, pos)
    found = _first_bad(value, ())
    return NumberRefused(*found) if found else NumberRefused((), "a number JSON text may not hold")


def _first_bad(value: Any, path: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], str] | None:
    if isinstance(value, _Bad):
        return path, value.why
    pairs = value if isinstance(value, _Pairs) else enumerate(value) if isinstance(value, list) else ()
    for key, member in pairs:
        if (found := _first_bad(member, (*path, key))) is not None:
            return found
    return None

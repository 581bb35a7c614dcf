"""Limits on JSON text from outside (imported records, API request bodies): size and nesting depth,
checked on the text before it is parsed.

Python's parser gives up with a RecursionError somewhere past 1,000 levels and PostgreSQL refuses
deep JSONB too; neither says where. Checking the text first turns both into a message that names
the place, and keeps records to what the screens and exports are built for.
"""

from __future__ import annotations

import re

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

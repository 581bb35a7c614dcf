"""Whether a JSON schema is one OpenAI's strict structured output takes (`response_format` json_schema
with `"strict": true`): the subset of JSON Schema it constrains decoding to, as its Structured
Outputs guide lists it. A hosted API answers a schema outside it with HTTP 400 for every request, so
the HTTP backend asks such a schema as `json_object` with the schema in the prompt instead, and the
answer is still checked against the whole schema when it comes back.

The rules: the root is an object (no `anyOf` there); every object lists all its properties in
`required` and sets `additionalProperties: false`; only the keywords below (strings: `pattern` and
the listed `format`s, not `minLength`/`maxLength`; numbers: the bounds and `multipleOf`; arrays:
`minItems`/`maxItems`; `anyOf`, `enum`, `const`, `$ref` within the schema, `$defs`); at most 10
levels of nested objects, 5,000 properties and 1,000 enum values in all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
KEYWORDS = {
    "type", "description", "title", "enum", "const", "anyOf", "$ref", "$defs",
    "properties", "required", "additionalProperties",
    "items", "minItems", "maxItems",
    "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
}
MAX_DEPTH, MAX_PROPERTIES, MAX_ENUM_VALUES = 10, 5000, 1000


def strict_schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """What keeps `schema` out of OpenAI's strict structured output, each with where it is (a JSON
    pointer into the schema); an empty list when it is accepted."""
    problems: list[str] = []
    totals = {"properties": 0, "enum": 0}
    if not isinstance(schema, Mapping) or schema.get("type") != "object" or "anyOf" in schema:
        problems.append("/: the root must be an object schema (type \"object\", no anyOf)")
    _check(schema, "", 1, problems, totals, schema)
    if totals["properties"] > MAX_PROPERTIES:
        problems.append(f"/: {totals['properties']} properties in all; at most {MAX_PROPERTIES}")
    if totals["enum"] > MAX_ENUM_VALUES:
        problems.append(f"/: {totals['enum']} enum values in all; at most {MAX_ENUM_VALUES}")
    return problems


def _check(node: Any, where: str, depth: int, problems: list[str], totals: dict[str, int], root: Mapping[str, Any]) -> None:
    at = where or "/"
    if not isinstance(node, Mapping):
        problems.append(f"{at}: a schema must be an object, not {type(node).__name__}")
        return
    for key in node:
        if key not in KEYWORDS:
            problems.append(f"{at}: {key} is not supported")
    types = node.get("type")
    for t in types if isinstance(types, list) else [types] if types is not None else []:
        if t not in TYPES:
            problems.append(f"{at}: type {t!r} is not supported")
    if "format" in node and node["format"] not in FORMATS:
        problems.append(f"{at}: format {node['format']!r} is not supported")
    if isinstance(node.get("enum"), list):
        totals["enum"] += len(node["enum"])
    ref = node.get("$ref")
    defined = {f"#/$defs/{name}" for name in root.get("$defs") or {}}
    if ref is not None and not (isinstance(ref, str) and (ref == "#" or ref in defined)):
        problems.append(f"{at}: $ref {ref!r} does not name the schema or one of its $defs")
    is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in node
    if is_object:
        if depth > MAX_DEPTH:
            problems.append(f"{at}: objects nested deeper than {MAX_DEPTH} levels")
        properties = node.get("properties") or {}
        totals["properties"] += len(properties)
        if node.get("additionalProperties") is not False:
            problems.append(f"{at}: an object must set additionalProperties to false")
        missing = [name for name in properties if name not in (node.get("required") or [])]
        if missing:
            problems.append(f"{at}: every property must be required; not required: {', '.join(missing)}")
        for name, sub in properties.items():
            _check(sub, f"{where}/properties/{name}", depth + 1, problems, totals, root)
    if "items" in node:
        _check(node["items"], f"{where}/items", depth, problems, totals, root)
    for n, sub in enumerate(node.get("anyOf") or []):
        _check(sub, f"{where}/anyOf/{n}", depth, problems, totals, root)
    for name, sub in (node.get("$defs") or {}).items():
        _check(sub, f"{where}/$defs/{name}", depth, problems, totals, root)

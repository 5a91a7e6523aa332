"""The `x-mcp-header` annotations of a tool's input schema (2026-07-28, server/tools.mdx), checked as the spec
tells a client to: a tool with an invalid one is left out of the listing, and the hub logs a warning naming it.

An `x-mcp-header` value is valid when it is a non-empty HTTP token (RFC 9110 `1*tchar`, so no control characters),
unique among the schema's values ignoring case, and it annotates a property of type integer, string or boolean that
is reached from the schema's root through `properties` keys only (not `items`, `oneOf`/`anyOf`/`allOf`/`not`,
`if`/`then`/`else` or `$ref`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

HEADER_KEY = "x-mcp-header"
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_PRIMITIVE = frozenset({"integer", "string", "boolean"})
_DEPTH = 32  # schemas nested deeper than this are not looked into further


def header_problem(schema: Any) -> str | None:
    """What is wrong with the `x-mcp-header` annotations of the input schema `schema`; None if nothing."""
    if not isinstance(schema, dict):
        return None
    seen: dict[str, str] = {}
    reachable: set[int] = set()
    for path, node in _reachable(schema, (), 0):
        reachable.add(id(node))
        if HEADER_KEY not in node:
            continue
        where = ".".join(path)
        value = node[HEADER_KEY]
        if not isinstance(value, str) or not _TOKEN.match(value):
            return f"property {where!r}: x-mcp-header {value!r} is not a valid HTTP header name token"
        kind = node.get("type")
        if kind not in _PRIMITIVE:
            return f"property {where!r}: x-mcp-header applies to integer, string or boolean only, not {kind!r}"
        other = seen.setdefault(value.lower(), where)
        if other != where:
            return f"x-mcp-header {value!r} is given to both {other!r} and {where!r}"
    stray = _stray(schema, reachable, 0)
    if stray is not None:
        return f"x-mcp-header {stray!r} annotates what is not reached from the schema's root by properties alone"
    return None


def _reachable(node: dict[str, Any], path: tuple[str, ...], depth: int) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every property schema reached from the root through `properties` keys, with its path."""
    properties = node.get("properties")
    if depth > _DEPTH or not isinstance(properties, dict):
        return
    for name, child in properties.items():
        if isinstance(child, dict):
            yield (*path, str(name)), child
            yield from _reachable(child, (*path, str(name)), depth + 1)


def _stray(node: Any, reachable: set[int], depth: int) -> Any:
    """An `x-mcp-header` value found on a subschema that is not statically reachable; None if there is none."""
    if depth > _DEPTH:
        return None
    values: list[Any]
    if isinstance(node, dict):
        if HEADER_KEY in node and id(node) not in reachable:
            return node[HEADER_KEY]
        values = []
        for key, value in node.items():
            # A `properties` map's keys are property names (one may be called x-mcp-header): look into its values.
            values.extend(value.values() if key == "properties" and isinstance(value, dict) else [value])
    elif isinstance(node, list):
        values = node
    else:
        return None
    for value in values:
        found = _stray(value, reachable, depth + 1)
        if found is not None:
            return found
    return None

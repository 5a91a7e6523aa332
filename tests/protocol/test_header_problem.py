"""The x-mcp-header annotations of a tool's input schema (hub.protocol.headers.header_problem, the SDK's check), as
2026-07-28 defines them: what the hub leaves out of a listing."""

from __future__ import annotations

from typing import Any

import pytest

from hub.protocol.headers import header_problem


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    "valid",
    [
        None,
        "not a schema",
        {"type": "object"},
        schema(query={"type": "string"}),
        schema(region={"type": "string", "x-mcp-header": "Region"}, n={"type": "integer", "x-mcp-header": "N"}),
        schema(flag={"type": "boolean", "x-mcp-header": "X_Flag.v1~"}),
        schema(outer={"type": "object", "properties": {"inner": {"type": "string", "x-mcp-header": "Inner"}}}),
        schema(**{"x-mcp-header": {"type": "string"}}),  # a property called x-mcp-header is no annotation
    ],
)
def test_valid_or_absent_annotations_pass(valid: Any) -> None:
    assert header_problem(valid) is None


@pytest.mark.parametrize(
    ("invalid", "said"),
    [
        (schema(r={"type": "string", "x-mcp-header": ""}), "RFC 9110 token"),
        (schema(r={"type": "string", "x-mcp-header": "Bad Name"}), "RFC 9110 token"),
        (schema(r={"type": "string", "x-mcp-header": "Bad\r\nX: y"}), "RFC 9110 token"),
        (schema(r={"type": "string", "x-mcp-header": 7}), "must be a string"),
        (schema(r={"type": "number", "x-mcp-header": "R"}), "integer/string/boolean"),
        (schema(r={"type": "object", "x-mcp-header": "R"}), "integer/string/boolean"),
        (
            schema(a={"type": "string", "x-mcp-header": "Same"}, b={"type": "string", "x-mcp-header": "same"}),
            "duplicates",
        ),
        (schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}), "not reachable"),
        (schema(a={"anyOf": [{"type": "string", "x-mcp-header": "A"}]}), "not reachable"),
        ({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}, "not reachable"),
    ],
)
def test_an_invalid_annotation_is_named(invalid: dict[str, Any], said: str) -> None:
    problem = header_problem(invalid)
    assert problem is not None and said in problem

"""The fast JSON-RPC parser gives exactly what the SDK's validating parser gives, and rejects what it rejects."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from hub.wire import parse_message

SAMPLES = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"a": 1}}},
    {"jsonrpc": "2.0", "id": "abc", "method": "ping"},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}},
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}], "isError": False}},
    {"jsonrpc": "2.0", "id": 7, "result": {}},
    {"jsonrpc": "2.0", "id": 8, "error": {"code": -32602, "message": "Unknown tool", "data": {"x": 1}}},
    {"jsonrpc": "2.0", "id": 9, "method": "x", "params": None},
    {"jsonrpc": "2.0", "id": True, "method": "x"},  # odd, but the SDK takes it: so do we (via its parser)
]


@pytest.mark.parametrize("message", SAMPLES)
def test_parses_and_dumps_exactly_like_the_sdk(message: dict[str, object]) -> None:
    line = json.dumps(message).encode()
    ours, theirs = parse_message(line), types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    assert type(ours) is type(theirs)
    assert ours.model_dump_json(by_alias=True, exclude_unset=True) == theirs.model_dump_json(
        by_alias=True, exclude_unset=True
    )


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[]",
        b'{"jsonrpc": "1.0", "id": 1, "method": "x"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}',
        b'{"jsonrpc": "2.0", "id": 1, "result": []}',
        b'{"jsonrpc": "2.0", "id": 1}',
    ],
)
def test_rejects_what_the_sdk_rejects(line: bytes) -> None:
    with pytest.raises(ValueError):
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    with pytest.raises(ValueError):
        parse_message(line)

"""The fast JSON-RPC parser gives exactly what the SDK's validating parser gives, and rejects what it rejects."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from hub.wire import decode_answer, parse_message

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


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}',
        '{"jsonrpc":"2.0","id":12,"result":{"text":"h\u00e9llo \u2603"}}'.encode(),  # raw UTF-8: slice by characters
        b'{"jsonrpc":"2.0","id":0,"result":{"text":"caf\\u00e9","n":[1,2.5,null]}}\r',
    ],
)
def test_a_result_line_of_the_usual_shape_gives_its_result_bytes_exactly(line: bytes) -> None:
    data, exact = decode_answer(line)
    assert data == json.loads(line)
    assert exact is not None and json.loads(exact) == data["result"]
    rebuilt = b'{"jsonrpc":"2.0","id":%d,"result":%b}' % (data["id"], exact)
    assert rebuilt == line.rstrip(), "the bytes are the child's own, cut out whole"


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{"a":1},"result":{"a":2}}',  # a repeated key: json.loads keeps the last
        b'{"jsonrpc":"2.0","id":7,"result":{"a":1},"extra":true}',
        b'{"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}',  # not compact
        b'{"id":7,"jsonrpc":"2.0","result":{"a":1}}',  # other order
        b'{"jsonrpc":"2.0","id":7,"result":[1]}',  # not an object: reported as ever
        b'{"jsonrpc":"2.0","id":"7","result":{"a":1}}',
    ],
)
def test_any_other_line_decodes_as_json_loads_does_without_result_bytes(line: bytes) -> None:
    data, exact = decode_answer(line)
    assert exact is None and data == json.loads(line)


@pytest.mark.parametrize(
    "line",
    [b'{"jsonrpc":"2.0","id":07,"result":{}}', b'{"jsonrpc":"2.0","id":7,"result":{}', b'{"jsonrpc":"2.0","id":\xff}'],
)
def test_a_broken_result_line_is_not_json(line: bytes) -> None:
    assert decode_answer(line) == (None, None)

"""JSON-RPC lines to SDK message objects, cheaply.

Every message the hub relays is parsed twice (host line, child line). The SDK parses with a validating union
adapter; for the common, well-formed shapes (requests, notifications, results) building the model directly from
`json.loads` output gives the same object at a fraction of the cost. Anything unusual (errors, batches, bad
types) takes the validating path, so malformed input is reported exactly as the SDK reports it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import mcp_types as types

_VERSION = "2.0"
_DECODER = json.JSONDecoder()
# How nearly every JSON-RPC library writes a result: these keys, in this order, compact.
_RESULT_LINE = b'{"jsonrpc":"2.0","id":'
_RESULT_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":(0|[1-9][0-9]*),"result":')


def _is_id(value: Any) -> bool:
    return type(value) is int or type(value) is str  # not bool: ids are strict


def read_now(fd: int, size: int) -> bytes | None:
    """What a non-blocking descriptor has now: None if nothing yet, b"" at its end (or once it fails)."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def parse_message(line: bytes | bytearray | str) -> types.JSONRPCMessage:
    """Parse one line; raises ValueError (pydantic's or json's) on malformed input."""
    return message_from(decode(line), line)


def decode(line: bytes | bytearray | str) -> Any:
    """`json.loads`, or None for a line that is not JSON (the validating path then reports why)."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def decode_answer(line: bytes | bytearray) -> tuple[Any, bytes | None]:
    """`decode`, and for a result line of the usual shape also the exact bytes of its result.

    A pass-through can then forward a result without encoding it again: for a 1 MiB result that encoding was a
    third of the hub's CPU. The bytes are given only when the line is exactly `{"jsonrpc":"2.0","id":N,
    "result":{...}}`: its result is decoded where it starts, and nothing but the closing brace may follow it
    (so an extra or repeated key takes the ordinary path).
    """
    if not line.startswith(_RESULT_LINE):
        return decode(line), None
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return None, None  # as json.loads: not JSON
    head = _RESULT_HEAD.match(text)
    if head is not None:
        try:
            result, end = _DECODER.raw_decode(text, head.end())
        except ValueError:
            return None, None
        if type(result) is dict and text[end:].strip() == "}":
            start = head.end()
            exact = bytes(memoryview(line)[start:end]) if len(text) == len(line) else text[start:end].encode()
            return {"jsonrpc": _VERSION, "id": int(head.group(1)), "result": result}, exact
    return decode(text), None


def message_from(data: Any, line: bytes | bytearray | str) -> types.JSONRPCMessage:
    """The message of a line already decoded to `data`; raises ValueError on malformed input."""
    if type(data) is dict and data.get("jsonrpc") == _VERSION:
        method = data.get("method")
        params = data.get("params")
        fields: dict[str, Any]
        if type(method) is str and (params is None or type(params) is dict) and len(data) <= 4:
            fields = {"jsonrpc": _VERSION, "method": method}
            if "params" in data:
                fields["params"] = params
            if "id" not in data:
                return types.JSONRPCNotification.model_construct(**fields)
            if _is_id(data["id"]):
                return types.JSONRPCRequest.model_construct(id=data["id"], **fields)
        elif len(data) == 3 and type(data.get("result")) is dict and _is_id(data.get("id")):
            return types.JSONRPCResponse.model_construct(jsonrpc=_VERSION, id=data["id"], result=data["result"])
    return types.jsonrpc_message_adapter.validate_json(line, by_name=False)

"""JSON-RPC 2.0 framing for both sides of the hub: decoding a line, telling what it is, encoding an answer.

Every byte sequence a peer can send ends as one of the kinds below, never as an exception out of this module:

- `Request` / `Notification` / `Response`: a well-formed message (`params` an object or absent);
- `Invalid`: not a message we can act on. It keeps the request id when one was usable, so that the caller can answer
  with the error code JSON-RPC names (-32700 parse error, -32600 invalid request, -32602 invalid params) and the
  reason; without a usable id the caller logs it instead (nothing can be answered).

Decoding is bounded: a line is at most the reader's limit (the readers cut longer ones before they get here), and
JSON nested deeper than the interpreter allows is a parse error, not a crash. Encoding never fails on what decoding
let through: a lone surrogate (a JavaScript peer that cut an emoji in half) is written as its `\\uXXXX` escape.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

RequestId = int | str
VERSION = "2.0"

# Error codes: JSON-RPC 2.0's, then MCP's (the same numbers as mcp_types.jsonrpc). Written out here so that the
# host side answers before any model module is loaded (a desktop host times the hub's start).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

_UTF8 = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)
_DECODER = json.JSONDecoder()
# How nearly every JSON-RPC library writes a result: these keys, in this order, compact.
_RESULT_LINE = b'{"jsonrpc":"2.0","id":'
_RESULT_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":(0|[1-9][0-9]*),"result":')
# Error messages quote at most this much of what a peer sent.
QUOTE_LIMIT = 200


class EncodeError(ValueError):
    """A value that cannot be written as JSON (nested beyond the interpreter's limit)."""


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON; lone surrogates are escaped rather than refused.

    Raises:
        EncodeError: `value` is nested too deeply to encode.
    """
    try:
        return _UTF8.encode(value).encode()
    except UnicodeEncodeError:
        return _ASCII.encode(value).encode()
    except RecursionError:
        raise EncodeError("the message is nested too deeply to encode") from None


def quote(value: Any) -> str:
    """`value` for an error message or a log line: its JSON, cut to QUOTE_LIMIT characters."""
    try:
        text = _ASCII.encode(value)
    except (RecursionError, TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 3] + "..."


def is_id(value: Any) -> bool:
    """A usable JSON-RPC id: a string or an integer (not a bool, not null)."""
    return type(value) is str or type(value) is int


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]
    raw: bytes


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Response:
    """A result or an error. `exact` is the result's own bytes, when they could be cut out of the line."""

    id: RequestId
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    exact: bytes | None = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """What cannot be handled, and why. `id` is set when the peer can be answered (`code` says how)."""

    code: int
    reason: str
    id: RequestId | None = None


Message = Request | Notification | Response | Invalid


def parse(line: bytes) -> Message | list[Message]:
    """Decode one line into what it is; a JSON array (a batch) gives one entry per element."""
    try:
        data = json.loads(line)
    except RecursionError:
        return Invalid(PARSE_ERROR, "parse error: JSON nested too deeply")
    except ValueError as exc:  # not JSON, or not UTF-8
        return Invalid(PARSE_ERROR, f"parse error: {_first_line(exc)}")
    if type(data) is list:
        if not data:
            return Invalid(INVALID_REQUEST, "invalid request: an empty batch")
        return [classify(item, b"") for item in data]
    return classify(data, line)


def parse_answer(line: bytes) -> Message | list[Message]:
    """`parse` for a child's line: a result of the usual shape also gives its result's exact bytes.

    A result forwarded unchanged is then written without encoding it again (for a large result most of the hub's
    work). The bytes are given only for `{"jsonrpc":"2.0","id":N,"result":{...}}` with nothing after the result.
    """
    if line.startswith(_RESULT_LINE):
        try:
            text = line.decode()
        except UnicodeDecodeError:
            return Invalid(PARSE_ERROR, "parse error: not UTF-8")
        head = _RESULT_HEAD.match(text)
        if head is not None:
            try:
                result, end = _DECODER.raw_decode(text, head.end())
            except RecursionError:
                return Invalid(PARSE_ERROR, "parse error: JSON nested too deeply", int(head.group(1)))
            except ValueError:
                result, end = None, 0
            if type(result) is dict and text[end:].strip() == "}":
                start = head.end()
                exact = line[start:end] if len(text) == len(line) else text[start:end].encode()
                return Response(int(head.group(1)), result, None, exact)
    return parse(line)


def classify(data: Any, raw: bytes) -> Message:
    """What a decoded JSON value is as a JSON-RPC message."""
    if type(data) is not dict:
        return Invalid(INVALID_REQUEST, f"invalid request: a message must be a JSON object, not {_kind(data)}")
    request_id = data.get("id")
    usable = request_id if is_id(request_id) else None
    if data.get("jsonrpc") != VERSION:
        return Invalid(
            INVALID_REQUEST, f'invalid request: "jsonrpc" must be "2.0", not {quote(data.get("jsonrpc"))}', usable
        )
    if "method" in data:
        return _request(data, usable, raw)
    if usable is None:
        return Invalid(INVALID_REQUEST, "invalid message: neither a request (no method) nor a response (no usable id)")
    result, error = data.get("result"), data.get("error")
    if "result" in data and type(result) is dict and "error" not in data:
        return Response(usable, result, None)
    if "error" in data and type(error) is dict and "result" not in data:
        return Response(usable, None, error)
    return Invalid(INVALID_REQUEST, "invalid response: it needs exactly one of an object 'result' or 'error'", usable)


def _request(data: dict[str, Any], usable: RequestId | None, raw: bytes) -> Message:
    """A request or a notification (the message has a method)."""
    method = data["method"]
    if type(method) is not str:
        return Invalid(INVALID_REQUEST, f'invalid request: "method" must be a string, not {_kind(method)}', usable)
    if "id" in data and usable is None:
        return Invalid(INVALID_REQUEST, f"invalid request: id must be a string or an integer, not {_kind(data['id'])}")
    params = data.get("params", {})
    if type(params) is not dict:
        return Invalid(INVALID_PARAMS, f'invalid params: "params" must be an object, not {_kind(params)}', usable)
    if usable is not None:
        return Request(usable, method, params, raw)
    return Notification(method, params)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}.get(
        type(value), "an object"
    )


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:QUOTE_LIMIT] if str(exc) else type(exc).__name__


# ---- writing messages ---------------------------------------------------------------------------------------------


def request_line(request_id: RequestId, method: str, params: dict[str, Any] | None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": VERSION, "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return encode(message) + b"\n"


def notification_line(method: str, params: dict[str, Any] | None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return encode(message) + b"\n"


def result_line(request_id: RequestId, result: dict[str, Any] | bytes) -> bytes:
    """An answer; `result` as a value or as its encoded bytes (the child's own, say)."""
    body = result if isinstance(result, bytes) else encode(result)
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (encode(request_id), body)


def error_line(request_id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    try:
        body = encode(error)
    except EncodeError:
        body = encode({"code": code, "message": message})
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}\n' % (encode(request_id), body)

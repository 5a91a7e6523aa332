"""JSON-RPC 2.0 framing for both sides of the hub: decoding a line, telling what it is, encoding an answer.

Every byte sequence a peer can send ends as a `Request`, `Notification`, `Response` or `Invalid`, never as an
exception out of this module. `Invalid` keeps the request id wherever the fault does not touch it, with the code
JSON-RPC names, so that its sender gets an answer rather than waiting for its own timeout (the rules: "Bad input" in
docs/operations.md). Encoding never fails on what decoding let through: a lone surrogate is written as its escape;
what cannot be JSON (too deep, `1e999`) is an `EncodeError`. Toward a child the hub writes strictly (`encode_strict`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
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
REQUEST_CANCELLED = -32800
HEADER_MISMATCH = -32020
URL_ELICITATION_REQUIRED = -32042
UNSUPPORTED_PROTOCOL_VERSION = -32022

_UTF8 = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


class _Constant(ValueError):
    """`NaN`, `Infinity` or `-Infinity` in a message: Python's decoder reads them, JSON has no such values."""


def _refuse_constant(name: str) -> Any:
    raise _Constant(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_LENIENT = json.JSONDecoder()
# How nearly every JSON-RPC library writes a result: these keys, in this order, compact.
_RESULT_LINE = b'{"jsonrpc":"2.0","id":'
# The id's digits are bounded: the hub's own ids are small, and int() refuses more than 4,300 digits (ValueError).
_RESULT_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":(0|[1-9][0-9]{0,18}),"result":')
_RESULT_HEAD_BYTES = re.compile(_RESULT_HEAD.pattern.encode())
# A child's answer at least this long is decoded by `_large_result`.
LARGE_ANSWER = 1 << 16
# Error messages quote at most this much of what a peer sent.
QUOTE_LIMIT = 200
_SPACE = re.compile(r"[ \t\n\r]*")
# The last member of a message, when it is its id: `"id": 5}` or `"id": "x"}` at the very end.
_LAST_ID = re.compile(r'"id"[ \t\n\r]*:[ \t\n\r]*(-?\d+|"(?:[^"\\]|\\.){0,200}")[ \t\n\r]*\}[ \t\n\r]*$')


class EncodeError(ValueError):
    """A value that cannot be written as JSON (nested beyond the interpreter's limit, a float out of range)."""


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON; lone surrogates are escaped rather than refused. EncodeError: `value` is nested too
    deeply to encode, or holds a float JSON cannot write (infinity)."""
    try:
        try:
            return _UTF8.encode(value).encode()
        except UnicodeEncodeError:
            return _ASCII.encode(value).encode()
    except RecursionError:
        raise EncodeError("the message is nested too deeply to encode") from None
    except ValueError as exc:
        raise EncodeError(f"the message cannot be written as JSON: {exc}") from None


class LoneSurrogate(EncodeError):
    """A string of the message (a value or a key) holds a lone surrogate; `path` says where (`params.arguments.x`)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} holds a lone surrogate, which is not Unicode text and cannot be written as UTF-8")
        self.path = path


def encode_strict(value: Any) -> bytes:
    """Compact UTF-8 JSON, as a peer that decodes strictly can read it (a lone surrogate is valid JSON text but not
    Unicode: a child's decoder may choke on it without answering). LoneSurrogate names where one is; EncodeError as
    `encode`."""
    try:
        return _UTF8.encode(value).encode()
    except UnicodeEncodeError:
        raise LoneSurrogate(surrogate_path(value)) from None
    except RecursionError:
        raise EncodeError("the message is nested too deeply to encode") from None
    except ValueError as exc:
        raise EncodeError(f"the message cannot be written as JSON: {exc}") from None


def surrogate_path(value: Any) -> str:
    """Where a string (or key) holding a lone surrogate is in `value`: `a.b[2].c`, or "" when none does."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _is_text(item):
                return path
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                readable = not isinstance(key, str) or _is_text(key)
                name = str(key) if readable else key.encode("ascii", "backslashreplace").decode()
                at = f"{path}.{name}" if path else name
                if not readable:
                    return at
                stack.append((child, at))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{path}[{n}]") for n, child in reversed(list(enumerate(item))))
    return ""


def _is_text(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


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
    """What cannot be handled, and why. `id` is set when the peer can be answered (`code` says how). `response`: it
    was meant as an answer to a request of ours under `id`, so it is not answered back (its sender would take that
    for an answer of its own), the request it answers fails instead; `request`: it was meant as a request."""

    code: int
    reason: str
    id: RequestId | None = None
    response: bool = field(default=False, compare=False)
    request: bool = field(default=False, compare=False)


Message = Request | Notification | Response | Invalid


def parse(line: bytes) -> Message | list[Message]:
    """Decode one line into what it is; a JSON array (a batch) gives one entry per element."""
    try:
        text = line.decode("utf-8", "surrogatepass")  # as json.loads reads bytes: escaped or not, a surrogate is one
    except UnicodeDecodeError as exc:
        return _not_utf8(line, exc)
    try:
        data = _DECODER.decode(text)
    except RecursionError:
        return _too_deep(text)
    except _Constant as exc:
        return _with_id(text, text, f"parse error: {exc}")
    except ValueError as exc:  # not JSON
        return Invalid(PARSE_ERROR, f"parse error: {_first_line(exc)}")
    if type(data) is list:
        if not data:
            return Invalid(INVALID_REQUEST, "invalid request: an empty batch")
        return [classify(item, b"") for item in data]
    return classify(data, line)


def parse_answer(line: bytes) -> Message | list[Message]:
    """`parse` for a child's line; a result of the usual shape, `{"jsonrpc":"2.0","id":N,"result":{...}}` with
    nothing after it, also gives its exact bytes, so that it is forwarded unchanged without encoding it again."""
    if line.startswith(_RESULT_LINE):
        if len(line) >= LARGE_ANSWER:
            large = _large_result(line)
            if large is not None:
                return large
        try:
            text = line.decode()
        except UnicodeDecodeError:
            return parse(line)  # it says what is wrong, with the id if that is usable
        head = _RESULT_HEAD.match(text)
        if head is not None:
            try:
                result, end = _DECODER.raw_decode(text, head.end())
            except RecursionError:
                reason = "invalid response: the result is nested too deeply to decode"
                return Invalid(INVALID_REQUEST, reason, int(head.group(1)), response=True)
            except ValueError:
                result, end = None, 0
            if type(result) is dict and text[end:].strip() == "}":
                start = head.end()
                exact = line[start:end] if len(text) == len(line) else text[start:end].encode()
                return Response(int(head.group(1)), result, None, exact)
    return parse(line)


def _large_result(line: bytes) -> Response | None:
    """A large result of the usual shape, decoded by pydantic-core's parser (jiter), faster than `json` on a long
    text. Its bytes (between the head and the line's last `}`) must decode whole as one object; None for anything
    refused (not UTF-8, `NaN`, too deep, trailing data), which `parse_answer`'s own decoding then names."""
    head = _RESULT_HEAD_BYTES.match(line)
    body = line.rstrip()
    if head is None or not body.endswith(b"}"):
        return None
    exact = body[head.end() : -1].rstrip()
    if not exact.startswith(b"{"):
        return None
    from pydantic_core import from_json  # loaded by then: the SDK's models use it

    try:
        result = from_json(exact, allow_inf_nan=False)
    except ValueError:
        return None
    return Response(int(head.group(1)), result, None, exact) if type(result) is dict else None


_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,400}|"(?:[^"\\]|\\.){0,200}")\s*[,}]'
)


def leading_id(head: bytes) -> RequestId | None:
    """The id of a message cut short (over a size limit), if it comes first: `{"jsonrpc":"2.0","id":...`."""
    found = _LEADING_ID.match(head)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if is_id(value) else None


def _not_utf8(line: bytes, exc: UnicodeDecodeError) -> Invalid:
    """A line with bytes that are not UTF-8: a parse error, answerable if the id is usable and intact."""
    reason = f"parse error: the message is not UTF-8 (byte 0x{line[exc.start]:02x} at offset {exc.start})"
    # The invalid bytes set aside two ways: an id they touch reads differently.
    return _with_id(line.decode("utf-8", "surrogateescape"), line.decode("utf-8", "replace"), reason)


def _with_id(kept: str, replaced: str, reason: str) -> Invalid:
    """A parse error, with the message's id if it reads the same (and usable) in both readings of it."""
    try:
        first, second = _LENIENT.decode(kept), _LENIENT.decode(replaced)
    except (ValueError, RecursionError):
        return Invalid(PARSE_ERROR, reason)
    if type(first) is dict and type(second) is dict and is_id(first.get("id")) and first["id"] == second.get("id"):
        return Invalid(PARSE_ERROR, reason, first["id"], _answer_shaped(first), "method" in first)
    return Invalid(PARSE_ERROR, reason)


def _too_deep(text: str) -> Message:
    """A line nested beyond what the decoder can take: the id is kept when it comes before the member too deep or
    is the last member (most writers put it first or last); the error names that member (-32602 for `params`)."""
    members, deep = _top_level(text)
    if deep is None:
        return Invalid(PARSE_ERROR, "parse error: the message is nested too deeply to decode")
    request_id = members.get("id")
    if "id" not in members and deep != "id":
        last = _LAST_ID.search(text, max(0, len(text) - 512))
        try:
            request_id = json.loads(last.group(1)) if last is not None else None
        except ValueError:
            request_id = None
    usable = request_id if is_id(request_id) else None
    if deep == "params":
        return Invalid(INVALID_PARAMS, 'invalid params: "params" is nested too deeply to decode', usable, request=True)
    response = deep in ("result", "error") and "method" not in members
    kind = "response" if response else "request"
    reason = f"invalid {kind}: {quote(deep)} is nested too deeply to decode"
    return Invalid(INVALID_REQUEST, reason, usable, response, "method" in members or deep == "method")


def _top_level(text: str) -> tuple[dict[str, Any], str | None]:
    """The members of the object `text` up to the first one too deep to decode, and that one's key."""
    members: dict[str, Any] = {}
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return members, None
    at += 1
    while True:
        at = _skip(text, at)
        if not text.startswith('"', at):
            return members, None
        try:
            key, at = scanstring(text, at + 1)
            at = _skip(text, at)
            if not text.startswith(":", at):
                return members, None
            value, at = _DECODER.raw_decode(text, _skip(text, at + 1))
        except RecursionError:
            return members, key
        except ValueError:
            return members, None
        members[key] = value
        at = _skip(text, at)
        if not text.startswith(",", at):
            return members, None
        at += 1


def _skip(text: str, at: int) -> int:
    space = _SPACE.match(text, at)
    return space.end() if space is not None else at


def classify(data: Any, raw: bytes) -> Message:
    """What a decoded JSON value is as a JSON-RPC message."""
    if type(data) is not dict:
        return Invalid(INVALID_REQUEST, f"invalid request: a message must be a JSON object, not {_kind(data)}")
    request_id = data.get("id")
    usable = request_id if is_id(request_id) else None
    if data.get("jsonrpc") != VERSION:
        response = _answer_shaped(data)
        kind = "response" if response else "request"
        reason = f'invalid {kind}: "jsonrpc" must be "2.0", not {quote(data.get("jsonrpc"))}'
        return Invalid(INVALID_REQUEST, reason, usable, response, "method" in data)
    if "method" in data:
        return _request(data, usable, raw)
    if usable is None:
        return Invalid(INVALID_REQUEST, "invalid message: neither a request (no method) nor a response (no usable id)")
    result, error = data.get("result"), data.get("error")
    if "result" in data and type(result) is dict and "error" not in data:
        return Response(usable, result, None)
    if "error" in data and type(error) is dict and "result" not in data:
        return Response(usable, None, error)
    reason = "invalid response: it needs exactly one of an object 'result' or 'error'"
    return Invalid(INVALID_REQUEST, reason, usable, response=_answer_shaped(data))


def _request(data: dict[str, Any], usable: RequestId | None, raw: bytes) -> Message:
    method = data["method"]
    if type(method) is not str:
        reason = f'invalid request: "method" must be a string, not {_kind(method)}'
        return Invalid(INVALID_REQUEST, reason, usable, request=True)
    if "id" in data and usable is None:
        return Invalid(INVALID_REQUEST, f"invalid request: id must be a string or an integer, not {_kind(data['id'])}")
    params = data.get("params", {})
    if type(params) is not dict:
        reason = f'invalid params: "params" must be an object, not {_kind(params)}'
        return Invalid(INVALID_PARAMS, reason, usable, request=True)
    if usable is not None:
        return Request(usable, method, params, raw)
    return Notification(method, params)


def _answer_shaped(data: dict[str, Any]) -> bool:
    """No method, and a result or an error: meant as an answer, however wrong."""
    return "method" not in data and ("result" in data or "error" in data)


_KINDS = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), "an object")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:QUOTE_LIMIT] if str(exc) else type(exc).__name__


# ---- writing messages ---------------------------------------------------------------------------------------------


def request_line(request_id: RequestId, method: str, params: dict[str, Any] | None) -> bytes:
    return _line({"jsonrpc": VERSION, "id": request_id, "method": method}, params)


def notification_line(method: str, params: dict[str, Any] | None) -> bytes:
    return _line({"jsonrpc": VERSION, "method": method}, params)


def _line(message: dict[str, Any], params: dict[str, Any] | None) -> bytes:
    return encode(message if params is None else {**message, "params": params}) + b"\n"


def result_line(request_id: RequestId, result: dict[str, Any] | bytes) -> bytes:
    """An answer; `result` as a value or as its encoded bytes (the child's own, say)."""
    body = result if isinstance(result, bytes) else encode(result)
    # join, not %: formatting bytes with % copies a large result several times over (1 ms for 1 MiB).
    return b"".join((b'{"jsonrpc":"2.0","id":', _id(request_id), b',"result":', body, b"}\n"))


def error_line(request_id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    try:
        body = encode(error)
    except EncodeError:
        body = encode({"code": code, "message": message})
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}\n' % (_id(request_id), body)


def _id(request_id: RequestId | None) -> bytes:
    return b"%d" % request_id if type(request_id) is int else encode(request_id)


def batch_refusals(items: list[Message]) -> list[bytes]:
    """The answers to a JSON-RPC batch, which MCP does not have: each request (or invalid message with an id) in it
    is told so."""
    lines = []
    refusal = "invalid request: JSON-RPC batches are not supported; send one message per line"
    for item in items:
        if isinstance(item, Request):
            lines.append(error_line(item.id, INVALID_REQUEST, refusal))
        elif isinstance(item, Invalid) and item.id is not None and not item.response:
            lines.append(error_line(item.id, item.code, item.reason))
    return lines

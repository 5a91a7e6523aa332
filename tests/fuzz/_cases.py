"""The fuzz suite's cases: a seeded generator of hostile host messages and hostile child lines, and the oracle that
says which answers each one must get.

Everything is drawn from one `random.Random(seed)`: a seed gives the same cases, byte for byte, on every machine.

A host case is the bytes of one message (one line over stdio, one POST body over HTTP) and what must come back:
`expect` counts, by JSON-RPC id, the answers it must get. A message "has a usable id" when it is a JSON object
(or, in a batch, an element) whose `id` is a string or an integer, that is not meant as an answer (no method, and
a `result` or an `error`, well-formed or not: an answer is never answered back), read with any bytes that are not
UTF-8 (or NaN, Infinity) set aside, and with that id untouched by them. A message nested too deeply to decode has
a usable id when the id comes before the member that is too deep, or is its last member (cases built so set
`expect` themselves).

A child case is a `tools/call` of the hostile child's `emit` tool (tests/fuzz/hostile_child.py) with the lines
the child writes before (or instead of) its ordinary answer; `outcome` says what the host must get for the call.
"""

from __future__ import annotations

import base64
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The hub's default max_request_bytes (hub.config.settings.DEFAULT_MAX_REQUEST_BYTES): oversized cases exceed it.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
# The hostile child's max_result_bytes in the fuzz configuration: its oversized lines exceed it.
CHILD_MAX_RESULT = 64 * 1024
PREFIX = "fz"

Check = Callable[[dict[str, Any]], str | None]


@dataclass
class Case:
    """One message and what must come back for it."""

    body: bytes
    kind: str
    expect: Counter[Any] = field(default_factory=Counter)
    check: Check | None = None  # of the one answer, when `expect` has exactly one id: a problem, or None
    # Over HTTP: "session" (a POST in the fuzz session), "none" (a POST without a session), "modern" (a
    # 2026-07-28 POST), "transport" (headers, verbs and paths of all kinds: each id answered at most once) or "raw"
    # (bytes on a socket of its own: an HTTP error or a closed connection, never a 5xx).
    mode: str = "session"
    headers: dict[str, str] = field(default_factory=dict)  # over the mode's own; a None value removes one
    verb: str = "POST"
    path: str = "/mcp"

    def __post_init__(self) -> None:
        self.expect = Counter({norm(k): n for k, n in self.expect.items()})


def norm(request_id: Any) -> Any:
    """An id as JSON can carry it: a high surrogate followed by a low one is one character once written as
    escapes, however it came (raw bytes for one half, an escape for the other)."""
    if type(request_id) is str:
        return request_id.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return request_id


# ---- hostile values -------------------------------------------------------------------------------------------

STRINGS = [
    "",
    "a",
    "héllo wörld",
    "😀",
    "\ud800",
    "\udfff",
    "\ud83d",
    "x\ud83dy",
    "\ude00\ud83d",
    "\u0000",
    "\u0000\u001f\u007f",
    "\u202e\u2066rtl",
    "\ufeffbom",
    "\uffff\U0010ffff",
    '"',
    "\\",
    "\n\r\t",
    "%s%n%x",
    "../../etc/passwd",
    "${HOME}",
    "<script>",
    "a" * 300,
    "ü" * 2000,
]
NUMBERS: list[Any] = [0, -1, 1, 2**31, 2**53 + 1, 2**63, 2**64 + 1, 10**30, -(10**30), 1.5, -0.0, 1e308, 5e-324]
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "sampling/createMessage",
    "roots/list",
    "rpc.discover",
    "tools/call/",
    "TOOLS/CALL",
]
NOTIFICATIONS = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
    "notifications/progress",
    "notifications/message",
    "notifications/unknown",
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
}
HOST_CAPABILITIES: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}
# Raw JSON tokens that json.dumps cannot produce (or that Python accepts and JSON does not).
RAW_TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-0", b"0.0e0", b"123456789012345678901234567890"]


def nested(depth: int, rng: random.Random) -> bytes:
    """A JSON value nested `depth` levels deep (arrays, objects or both)."""
    style = rng.choice(["array", "object", "mixed"])
    if style == "array":
        return b"[" * depth + b"]" * depth
    if style == "object":
        return b'{"a":' * depth + b"{}" + b"}" * depth
    opens = [rng.choice([b"[", b'{"k":']) for _ in range(depth)]
    closes = [b"]" if o == b"[" else b"}" for o in reversed(opens)]
    return b"".join(opens) + b"0" + b"".join(closes)


class Gen:
    """The seeded generator. `serial` makes every id it hands out unique within a run."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.serial = 0

    # -- small values ---------------------------------------------------------------------------------------------

    def uid(self, hostile: bool = True) -> Any:
        """A usable id, unique in the run: an integer, or a string (often a hostile one)."""
        self.serial += 1
        n = self.serial
        r = self.rng.random()
        if r < 0.4:
            return n
        if r < 0.5 or not hostile:
            return f"r{n}"
        if r < 0.6:
            return -n
        if r < 0.65:
            return 10**30 + n
        return self.rng.choice(STRINGS[:16]) + f"#{n}"

    def unusable_id(self) -> Any:
        return self.rng.choice([None, True, False, 1.5, 2.0, 1e3, [], [1], {}, {"id": 1}, -0.5])

    def string(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return self.rng.choice(STRINGS)
        if r < 0.8:
            return "".join(chr(self.rng.randrange(0x20, 0x2FF)) for _ in range(self.rng.randrange(0, 30)))
        return "".join(chr(self.rng.choice([self.rng.randrange(0xD800, 0xE000), 0x61, 0x1F600])) for _ in range(5))

    def value(self, depth: int = 0) -> Any:
        """Any JSON value, small and shallow."""
        r = self.rng.random()
        if depth > 3 or r < 0.25:
            return self.rng.choice([None, True, False, *NUMBERS[:9]])
        if r < 0.55:
            return self.string()
        if r < 0.75:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(0, 4))]
        return {self.string(): self.value(depth + 1) for _ in range(self.rng.randrange(0, 4))}

    def anything(self) -> Any:
        """A value of any type, for a member that must have a given one."""
        return self.rng.choice([None, True, 0, -1, 1.5, "", "x", [], ["x"], {}, {"k": "v"}, self.string()])

    # -- messages -------------------------------------------------------------------------------------------------

    def params_for(self, method: Any) -> Any:
        """Params for `method`: mostly of the right shape, with members of any type; now and then not an object."""
        if self.rng.random() < 0.1:
            return self.anything()
        makers: dict[str, Callable[[], Any]] = {
            "tools/call": self._call,
            "initialize": self._initialize,
            "resources/read": self._uri,
            "resources/subscribe": self._uri,
            "resources/unsubscribe": self._uri,
            "prompts/get": self._prompt,
            "completion/complete": self._completion,
            "logging/setLevel": lambda: {"level": self.rng.choice(["debug", "info", "error", "loud", self.anything()])},
            "tools/list": self._listing,
            "prompts/list": self._listing,
            "resources/list": self._listing,
            # Never the id of a request of the run: a cancelled request gets no answer, and the count would not hold.
            "notifications/cancelled": lambda: {
                "requestId": self.rng.choice([f"cx-{self.serial}", self.anything()]),
                "reason": self.value(),
            },
            "notifications/progress": lambda: {
                "progressToken": self.anything(),
                "progress": self.anything(),
                "message": self.value(),
            },
        }
        maker = makers.get(method) if isinstance(method, str) else None
        if maker is not None:
            return maker()
        return {self.string(): self.value()} if self.rng.random() < 0.5 else {}

    def _call(self) -> dict[str, Any]:
        rng = self.rng
        name = rng.choice([f"{PREFIX}_echo", f"{PREFIX}_echo", "hub_health", "nope", self.string(), self.anything()])
        params: dict[str, Any] = {"name": name}
        if rng.random() < 0.85:
            params["arguments"] = (
                {"text": self.value()} if rng.random() < 0.7 else rng.choice([self.anything(), self.value()])
            )
        if rng.random() < 0.2:
            params["_meta"] = {"progressToken": rng.choice([self.uid(), self.anything()])}
        return params

    def _initialize(self) -> dict[str, Any]:
        rng = self.rng
        return {
            "protocolVersion": rng.choice(["2025-11-25", "2024-11-05", "1999-01-01", self.anything()]),
            # Mostly what the fuzzing host declares at first, so that the hub goes on asking it things.
            "capabilities": rng.choice([HOST_CAPABILITIES] * 6 + [{}, {"experimental": self.value()}, self.anything()]),
            "clientInfo": rng.choice([{"name": "f", "version": "1"}, self.anything()]),
        }

    def _uri(self) -> dict[str, Any]:
        return {"uri": self.rng.choice([f"{PREFIX}+file:///x", "file:///x", self.string(), self.anything()])}

    def _prompt(self) -> dict[str, Any]:
        return {"name": self.rng.choice([f"{PREFIX}_p", self.string(), self.anything()]), "arguments": self.value()}

    def _completion(self) -> dict[str, Any]:
        rng = self.rng
        ref = rng.choice(
            [
                {"type": "ref/prompt", "name": self.anything()},
                {"type": "ref/resource", "uri": self.anything()},
                self.anything(),
            ]
        )
        return {"ref": ref, "argument": rng.choice([{"name": "a", "value": "b"}, self.anything()])}

    def _listing(self) -> Any:
        return self.rng.choice([{}, {"cursor": self.anything()}, {"_meta": self.value()}])

    def _answer_like(self, message: dict[str, Any]) -> None:
        """A response, or something like one."""
        rng = self.rng
        message["id"] = self.uid()
        shape = rng.random()
        if shape < 0.4:
            message["result"] = rng.choice([{}, self.anything()])
        elif shape < 0.7:
            message["error"] = rng.choice([{"code": -1, "message": "x"}, self.anything()])
        elif shape < 0.85:
            message["result"], message["error"] = {}, {}

    def message(self) -> tuple[dict[str, Any], Any]:
        """A JSON-RPC-like object, often wrong in one member; and its id if that is usable (else None)."""
        rng = self.rng
        kind = rng.random()
        message: dict[str, Any] = {}
        if rng.random() < 0.93:
            message["jsonrpc"] = "2.0" if rng.random() < 0.85 else rng.choice(["1.0", "2", 2.0, None, ["2.0"], "2.0 "])
        if kind < 0.75:  # a request
            request_id = self.uid() if rng.random() < 0.9 else None
            message["id"] = request_id if request_id is not None else self.unusable_id()
            message["method"] = (
                rng.choice(METHODS) if rng.random() < 0.85 else rng.choice([self.string(), self.anything()])
            )
        elif kind < 0.9:  # a notification
            message["method"] = rng.choice(NOTIFICATIONS) if rng.random() < 0.9 else self.string()
        else:
            self._answer_like(message)
        if "method" in message and rng.random() < 0.9:
            params = self.params_for(message["method"])
            if params != {} or rng.random() < 0.5:
                message["params"] = params
        if rng.random() < 0.05:
            message[self.string()] = self.value()
        if rng.random() < 0.1:
            keys = list(message)
            rng.shuffle(keys)
            message = {k: message[k] for k in keys}
        return message, expected_id(message)


def expected_id(message: Any) -> Any:
    """The id a decoded message must be answered under, or None (see the module's docstring)."""
    if type(message) is not dict:
        return None
    request_id = message.get("id")
    if not is_id(request_id) or answer_shaped(message):
        return None
    return request_id


def answer_shaped(message: dict[str, Any]) -> bool:
    """Meant as an answer (no method; a result or an error), however wrong: never answered back."""
    return "method" not in message and ("result" in message or "error" in message)


def expected_for(value: Any) -> Counter[Any]:
    """The answers a decoded message must get: one per usable id, batches element by element."""
    found: Counter[Any] = Counter()
    for item in value if type(value) is list else [value]:
        request_id = expected_id(item)
        if request_id is not None:
            found[request_id] += 1
    return found


class _Constant(ValueError):
    pass


def _refuse(name: str) -> Any:
    raise _Constant(name)


_STRICT = json.JSONDecoder(parse_constant=_refuse)


def expected_body(body: bytes) -> Counter[Any]:
    """The answers one message (one line, or one HTTP body) must get, read as the module's docstring says."""
    if not body.strip():
        return Counter()
    try:
        text = body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # the id counts if it reads the same with the bad bytes set aside either way
        return _intact_id(body.decode("utf-8", "surrogateescape"), body.decode("utf-8", "replace"))
    try:
        return expected_for(_STRICT.decode(text))
    except _Constant:  # NaN, Infinity: not JSON, but the id may still be read
        return _intact_id(text, text)
    except (ValueError, RecursionError):
        return Counter()


def _intact_id(kept: str, replaced: str) -> Counter[Any]:
    try:
        first, second = json.loads(kept), json.loads(replaced)
    except (ValueError, RecursionError):
        return Counter()
    if type(first) is dict and type(second) is dict and is_id(first.get("id")) and first["id"] == second.get("id"):
        return Counter() if answer_shaped(first) else Counter({first["id"]: 1})
    return Counter()


def is_id(value: Any) -> bool:
    return type(value) is str or type(value) is int


def expected_lines(data: bytes) -> Counter[Any]:
    """The answers a stdio write must get: the hub reads it line by line."""
    found: Counter[Any] = Counter()
    for line in data.split(b"\n"):
        if len(line) <= MAX_REQUEST_BYTES:
            found += expected_body(line)
    return found


def dumps(value: Any, rng: random.Random) -> bytes:
    """JSON bytes of `value`: escaped ASCII, or UTF-8 (lone surrogates then written as raw CESU-8 bytes)."""
    if rng.random() < 0.7:
        return json.dumps(value, separators=(",", ":")).encode()
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


# ---- answer checks --------------------------------------------------------------------------------------------


def error_code(*codes: int) -> Check:
    def check(answer: dict[str, Any]) -> str | None:
        error = answer.get("error")
        if not isinstance(error, dict) or error.get("code") not in codes:
            return f"expected a JSON-RPC error {codes}, got {str(answer)[:300]}"
        return None

    return check


def any_error(answer: dict[str, Any]) -> str | None:
    return None if isinstance(answer.get("error"), dict) else f"expected a JSON-RPC error, got {str(answer)[:300]}"


def result_text(text: str) -> Check:
    def check(answer: dict[str, Any]) -> str | None:
        result = answer.get("result")
        try:
            got = result["content"][0]["text"]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            got = None
        if got != text or result.get("isError"):  # type: ignore[union-attr]
            return f"expected the result text {text!r}, got {str(answer)[:300]}"
        return None

    return check


def tool_failure(*words: str) -> Check:
    """An isError result (or a JSON-RPC error) that names the child and says what was wrong, not a closed wire."""

    def check(answer: dict[str, Any]) -> str | None:
        result, error = answer.get("result"), answer.get("error")
        if isinstance(result, dict) and result.get("isError") is True:
            text = str(result.get("content"))
        elif isinstance(error, dict):
            text = str(error.get("message"))
        else:
            return f"expected the call to fail, got {str(answer)[:300]}"
        if "closed the connection" in text or not any(w in text for w in words):
            return f"the failure does not say what was wrong ({words}): {text[:300]}"
        return None

    return check


def answered(answer: dict[str, Any]) -> str | None:
    return None


# ---- host cases -----------------------------------------------------------------------------------------------


def request_bytes(request_id: Any, method: Any, params: Any = None, *, ascii_only: bool = True) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    if ascii_only:
        return json.dumps(message, separators=(",", ":")).encode()
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def call_bytes(request_id: Any, name: str, arguments: dict[str, Any]) -> bytes:
    return request_bytes(request_id, "tools/call", {"name": name, "arguments": arguments})


class HostCases:
    """Host cases, drawn from a `Gen`. `front` is "stdio" or "http" (a body may carry a newline only over HTTP)."""

    def __init__(self, gen: Gen, front: str) -> None:
        self.gen = gen
        self.rng = gen.rng
        self.front = front

    def draw(self) -> Case:
        r = self.rng.random()
        if r < 0.55:
            return self.structured()
        if r < 0.75:
            return self.mutated()
        if r < 0.82:
            return self.batch()
        if r < 0.9:
            return self.deep()
        if r < 0.97:
            return self.encoding()
        return self.garbage()

    def _case(self, body: bytes, kind: str, check: Check | None = None) -> Case:
        expect = expected_lines(body) if self.front == "stdio" else expected_body(body)
        return Case(body, kind, expect, check if len(expect) == 1 else None)

    def structured(self) -> Case:
        message, _ = self.gen.message()
        body = dumps(message, self.rng)
        return self._case(body, "structured")

    def mutated(self) -> Case:
        rng = self.rng
        message, _ = self.gen.message()
        data = bytearray(json.dumps(message, separators=(",", ":")).encode())
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(0, len(data) + 1)
            op = rng.random()
            if op < 0.3 and data:
                data[min(at, len(data) - 1)] = rng.randrange(256)
            elif op < 0.55:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
            elif op < 0.7:
                del data[at : at + rng.randrange(1, 8)]
            elif op < 0.8:
                data = data[:at]
            elif op < 0.87:
                data[at:at] = rng.choice([b"\r", b"\t", b" ", b"\x00", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xc0\xaf"])
            elif op < 0.94:
                data[at:at] = rng.choice(RAW_TOKENS)
            else:
                piece = data[at : at + rng.randrange(1, 40)]
                data[at:at] = piece
        if self.front == "stdio" and rng.random() < 0.85:
            data = data.replace(b"\n", b" ")
        return self._case(bytes(data), "mutated")

    def batch(self) -> Case:
        rng = self.rng
        items: list[Any] = [self.gen.message()[0] for _ in range(rng.randrange(0, 5))]
        if rng.random() < 0.2:
            items.append(rng.choice([1, "x", None, [], [{}]]))
        return self._case(dumps(items, rng), "batch")

    def deep(self) -> Case:
        """Nesting: too deep (ids first, last, in the middle, or none), or just under what decodes."""
        rng = self.rng
        gen = self.gen
        request_id = gen.uid()
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
        where = rng.random()
        depth = rng.choice([50, 200, 900, 950, 990, 1000, 1100, 1500, 5000, 20000, 100000])
        value = nested(depth, rng)
        shallow = depth <= 200
        if where < 0.2:  # id first, deep params
            body = head + b',"method":"tools/call","params":{"name":"fz_echo","arguments":' + value + b"}}"
            check = answered if depth <= 1000 else error_code(-32602)
            return Case(body, f"deep params {depth}", Counter({request_id: 1}), check)
        if where < 0.3:  # id last
            body = (
                b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":'
                + value
                + b'},"id":'
                + json.dumps(request_id).encode()
                + b"}"
            )
            return Case(body, f"deep params, id last {depth}", Counter({request_id: 1}), answered)
        if where < 0.4:  # id in the middle, after the deep member: usable only if the message decodes
            body = (
                b'{"jsonrpc":"2.0","params":' + value + b',"id":' + json.dumps(request_id).encode() + b',"method":"x"}'
            )
            if shallow:
                return Case(body, f"deep, id in the middle {depth}", Counter({request_id: 1}), answered)
            if depth >= 1100:
                return Case(body, f"deep, id in the middle {depth}", Counter(), None)
            body = head + b',"method":' + value + b"}"  # borderline depth: keep the id first
            return Case(body, f"deep method {depth}", Counter({request_id: 1}), answered)
        if where < 0.5:  # no id: the whole message, or the id itself
            body = value if rng.random() < 0.5 else b'{"jsonrpc":"2.0","id":' + value + b',"method":"ping"}'
            return Case(body, f"deep, no id {depth}", Counter(), None)
        # id first, deep somewhere else (the method, a member of its own, the jsonrpc member)
        member = rng.choice([b'"method"', b'"x"', b'"jsonrpc"'])
        body = head + b"," + member + b":" + value + b',"method":"ping"}'
        return Case(body, f"deep member {depth}", Counter({request_id: 1}), answered)

    def encoding(self) -> Case:
        """Not UTF-8, or surrogates: in the method, the id, a name, an argument."""
        rng = self.rng
        gen = self.gen
        request_id = gen.uid(hostile=False)
        bad = rng.choice(
            [b"\xff", b"\xfe\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xe2\x82"]
        )
        where = rng.choice(["method", "name", "argument", "id", "key", "surrogate-escape"])
        if where == "surrogate-escape":
            text = rng.choice(["\\ud800", "\\udfff", "\\ud83d", "\\ud83d\\ude00", "\\ude00\\ud83d", "\\u0000"])
            template = rng.choice(
                [
                    b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"fz_echo","arguments":{"text":"T"}}}',
                    b'{"jsonrpc":"2.0","id":%b,"method":"T"}',
                    b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"T"}}',
                ]
            )
            body = template.replace(b"T", text.encode()) % json.dumps(request_id).encode()
            return self._case(body, "surrogate escape", answered)
        if where == "id":
            body = b'{"jsonrpc":"2.0","id":"a' + bad + b'","method":"ping"}'
            return self._case(body, "bad bytes in the id")
        fields = {
            "method": b'{"jsonrpc":"2.0","id":%b,"method":"tools/' + bad + b'call"}',
            "name": b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"fz_' + bad + b'"}}',
            "argument": b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"fz_echo",'
            b'"arguments":{"text":"' + bad + b'"}}}',
            "key": b'{"jsonrpc":"2.0","id":%b,"method":"ping","params":{"' + bad + b'":1}}',
        }
        body = fields[where] % json.dumps(request_id).encode()
        return self._case(body, f"bad bytes in the {where}", answered)

    def garbage(self) -> Case:
        rng = self.rng
        choice = rng.random()
        if choice < 0.3:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        elif choice < 0.5:
            body = rng.choice([b"", b" ", b"\t\r", b"null", b"1", b'"x"', b"[]", b"{}", b"[[]]", b"true", b"\x00"])
        elif choice < 0.7:
            body = rng.choice(RAW_TOKENS)
        else:
            body = b'{"jsonrpc":"2.0","id":' + str(self.gen.uid(hostile=False)).encode()
        if self.front == "stdio":
            body = body.replace(b"\n", b"")
        return self._case(body, "garbage")


class HttpCases(HostCases):
    """HTTP's own cases on top of the host cases: eras, headers, verbs, paths, raw bytes."""

    def __init__(self, gen: Gen) -> None:
        super().__init__(gen, "http")

    def draw(self) -> Case:
        r = self.rng.random()
        if r < 0.08:
            return self.modern()
        if r < 0.13:
            case = super().draw()
            case.mode = "none"
            return case
        if r < 0.17:
            return self.transport()
        if r < 0.19:
            return self.raw()
        return super().draw()

    def modern(self) -> Case:
        """A 2026-07-28 request: its envelope in `_meta`, routing headers that match or not."""
        rng = self.rng
        message, _ = self.gen.message()
        if message.get("method") == "subscriptions/listen":  # a stream that ends only when the client leaves
            message["method"] = "tools/list"
        params = message.get("params")
        if type(params) is dict and rng.random() < 0.85:
            params["_meta"] = {
                **MODERN_META,
                **({"io.modelcontextprotocol/logLevel": self.gen.anything()} if rng.random() < 0.1 else {}),
            }
        method = message.get("method")
        headers: dict[str, Any] = {
            "mcp-protocol-version": rng.choice(["2026-07-28", "2026-07-28", "2025-11-25", "1999-01-01", "x"])
        }
        if rng.random() < 0.9:
            usable = type(method) is str and method.isascii() and method.isprintable()
            headers["mcp-method"] = method if usable and rng.random() < 0.9 else "tools/call"
        if type(params) is dict and type(params.get("name")) is str and rng.random() < 0.8:
            name = params["name"]
            headers["mcp-name"] = name if name.isascii() and name.isprintable() else "x"
        case = self._case(dumps(message, rng), "modern")
        case.mode, case.headers = "modern", headers
        return case

    def transport(self) -> Case:
        """Headers, verbs and paths a client can get wrong (the body a usable request)."""
        rng = self.rng
        request_id = self.gen.uid(hostile=False)
        body = request_bytes(request_id, "tools/list")
        variants: list[tuple[str, dict[str, Any], str, str]] = [
            ("content-type text/plain", {"content-type": "text/plain"}, "POST", "/mcp"),
            ("no content-type", {"content-type": None}, "POST", "/mcp"),
            ("no accept", {"accept": None}, "POST", "/mcp"),
            ("accept json only", {"accept": "application/json"}, "POST", "/mcp"),
            ("unknown session", {"mcp-session-id": "f" * 32}, "POST", "/mcp"),
            ("session id not ASCII", {"mcp-session-id": "\u00ffx"}, "POST", "/mcp"),
            ("foreign host", {"host": "evil.example:80"}, "POST", "/mcp"),
            ("foreign origin", {"origin": "http://evil.example"}, "POST", "/mcp"),
            ("bad protocol version", {"mcp-protocol-version": "9999-99-99"}, "POST", "/mcp"),
            ("GET without session", {"mcp-session-id": None}, "GET", "/mcp"),
            ("GET unknown session", {"mcp-session-id": "0" * 32}, "GET", "/mcp"),
            ("GET accept json", {"accept": "application/json"}, "GET", "/mcp"),
            ("DELETE unknown session", {"mcp-session-id": "1" * 32}, "DELETE", "/mcp"),
            ("PUT", {}, "PUT", "/mcp"),
            ("PATCH", {}, "PATCH", "/mcp"),
            ("other path", {}, "POST", "/mcp/x"),
            ("healthz", {}, "GET", "/healthz"),
            ("readyz", {}, "GET", "/readyz"),
            ("reload by GET", {}, "GET", "/reload"),
        ]
        kind, headers, verb, path = rng.choice(variants)
        case = Case(body, f"transport: {kind}", Counter({request_id: 1}) if verb == "POST" else Counter())
        case.mode, case.headers, case.verb, case.path = "transport", headers, verb, path
        return case

    def raw(self) -> Case:
        """Bytes that are not (quite) HTTP, on a connection of their own."""
        rng = self.rng
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        head = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        variants = [
            bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))),
            b"GET / HTTP/1.1\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS hello
            b"POST /mcp HTTP/9.9\r\nhost: x\r\n\r\n",
            head + b"content-length: -1\r\n\r\n" + body,
            head + b"content-length: 5\r\ncontent-length: 50\r\n\r\n" + body,
            head + b"transfer-encoding: chunked\r\n\r\nzz\r\n" + body + b"\r\n0\r\n\r\n",
            head + b"x-" + b"a" * 70000 + b": 1\r\n\r\n",
            head + b"bad header line\r\n\r\n",
            head + b"x-bin: \x00\x01\xff\r\n\r\n",
            head + b"content-length: %d\r\n\r\n" % len(body) + body + b"GARBAGE AFTER\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\n" + b"x: y\r\n" * 500 + b"\r\n",
        ]
        case = Case(rng.choice(variants), "raw")
        case.mode = "raw"
        return case


def named_cases(gen: Gen, front: str) -> list[Case]:
    """Every case the issue names, with the answer each must get."""
    deep_1000 = nested(1000, random.Random(0))
    deep_5000 = b"[" * 5000 + b"]" * 5000
    cases: list[Case] = []

    def add(body: bytes, kind: str, check: Check | None, expect_id: Any) -> None:
        cases.append(Case(body, kind, Counter({expect_id: 1}) if expect_id is not None else Counter(), check))

    i = gen.uid(hostile=False)
    add(
        b'{"jsonrpc":"2.0","id":%b,"method":"\\ud800"}' % json.dumps(i).encode(),
        "lone surrogate in method",
        error_code(-32601),
        i,
    )
    i = gen.uid(hostile=False)
    add(request_bytes(i, "\ud800", ascii_only=False), "raw surrogate bytes in method", error_code(-32601), i)
    add(
        call_bytes("\ud83d", f"{PREFIX}_echo", {"text": "half an emoji"}),
        'id "\\ud83d"',
        result_text("half an emoji"),
        "\ud83d",
    )
    for depth, value in ((1000, deep_1000), (5000, deep_5000)):
        add(value, f"{depth}-deep message, no id", None, None)
        i = gen.uid(hostile=False)
        body = b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"fz_echo","arguments":%b}}'
        add(body % (json.dumps(i).encode(), value), f"{depth}-deep params", error_code(-32602), i)
    i = gen.uid(hostile=False)
    add(
        b'{"jsonrpc":"1.0","id":%b,"method":"ping"}' % json.dumps(i).encode(),
        "wrong jsonrpc version",
        error_code(-32600),
        i,
    )
    i = gen.uid(hostile=False)
    add(b'{"id":%b,"method":"ping"}' % json.dumps(i).encode(), "no jsonrpc member", error_code(-32600), i)
    i = gen.uid(hostile=False)
    add(b'{"jsonrpc":"2.0","id":%b,"method":42}' % json.dumps(i).encode(), "non-string method", error_code(-32600), i)
    i = gen.uid(hostile=False)
    add(request_bytes(i, "tools/call", ["fz_echo", {}]), "array params", error_code(-32602), i)
    i = gen.uid(hostile=False)
    add(request_bytes(i, "tools/list", "x"), "string params", error_code(-32602), i)
    i = gen.uid(hostile=False)
    add(call_bytes(i, "x" * (5 * 1024 * 1024), {}), "5 MB tool name", any_error, i)
    i = gen.uid(hostile=False)
    j = gen.uid(hostile=False)
    batch = b"[" + request_bytes(i, "ping") + b"," + request_bytes(j, "tools/list") + b"]"
    cases.append(Case(batch, "batch of two", Counter({i: 1, j: 1}), None))
    cases.append(Case(b"[]", "empty batch", Counter(), None))
    i = gen.uid(hostile=False)
    add(
        b'{"jsonrpc":"2.0","id":%b,"method":"tools/\xffcall"}' % json.dumps(i).encode(),
        "invalid UTF-8 in method",
        error_code(-32700),
        i,
    )
    i = gen.uid(hostile=False)
    add(request_bytes(i, "logging/setLevel", {"level": []}), "unhashable log level", error_code(-32602), i)
    i = gen.uid(hostile=False)
    add(
        request_bytes(i, "completion/complete", {"ref": [1], "argument": {}}),
        "completion ref not an object",
        error_code(-32602),
        i,
    )
    i = gen.uid(hostile=False)
    add(request_bytes(i, "completion/complete", {"ref": "x"}), "completion ref a string", error_code(-32602), i)
    i = gen.uid(hostile=False)
    add(request_bytes(i, "ping").replace(b'"ping"', b'"ping","params":{"n":NaN}'), "NaN in params", None, i)
    i = gen.uid(hostile=False)
    oversized = b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"' % json.dumps(i).encode()
    oversized += b"y" * (MAX_REQUEST_BYTES + 1024) + b'"}}'
    add(oversized, "over max_request_bytes, id first", error_code(-32600), i)
    add(
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"' + b"z" * (MAX_REQUEST_BYTES + 10) + b'"}}',
        "over max_request_bytes, no id",
        None,
        None,
    )
    for case in cases:
        if front == "stdio":
            assert b"\n" not in case.body, case.kind
    return cases


# ---- child cases ----------------------------------------------------------------------------------------------


def _ok(text: str = "x") -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%ID%,"result":{"content":[{"type":"text","text":' + json.dumps(text).encode() + b"}]}}"
    )


class ChildCases:
    """Calls of the hostile child's `emit` tool: the lines it writes, and what the host must get. With `asking`,
    some calls carry a request of the child's for the host (for a host that declared sampling and the rest)."""

    def __init__(self, gen: Gen, asking: bool = False) -> None:
        self.gen = gen
        self.rng = gen.rng
        self.asking_share = 0.15 if asking else 0.0

    def noise(self) -> bytes:
        """A line that answers nothing the hub waits for."""
        rng = self.rng
        gen = self.gen
        far = rng.choice(
            [b"1000000000", b"-%ID%", b"0", b"10000000000000000000000000000", b'"%ID%"', b"%ID%.0", b"null"]
        )
        choices: list[Callable[[], bytes]] = [
            lambda: b"not json at all",
            lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 120))).replace(b"\n", b""),
            lambda: b"\xff\xfe\xfd garbage \xed\xa0\x80",
            lambda: rng.choice([b"[]", b"[1,2]", b"null", b'"s"', b"{}", b'{"jsonrpc":"2.0"}', b"1e999", b"NaN"]),
            lambda: nested(rng.choice([1100, 5000, 50000]), rng),
            lambda: b'{"jsonrpc":"2.0","id":' + far + b',"result":{}}',
            lambda: b'{"jsonrpc":"2.0","id":' + far + b',"error":{"code":-1,"message":"x"}}',
            lambda: (
                b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%ID%,'
                b'"progress":'
                + rng.choice([b'"x"', b"null", b"NaN", b"1e999", b"[]", b"-1"])
                + b',"message":'
                + rng.choice([b'"\\ud800"', b'"' + b"m" * 5000 + b'"', nested(900, rng), b"{}"])
                + b"}}"
            ),
            lambda: (
                b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":'
                + rng.choice([b"[]", b"{}", b'"debug"', b'"' + b"L" * 100000 + b'"', b"5", b'"\\udfff"'])
                + b',"logger":'
                + rng.choice([b"5", b'"l"', b"[]"])
                + b',"data":'
                + rng.choice([b'"\\ud83d"', nested(900, rng), b"NaN", b'"' + b"d" * 100000 + b'"'])
                + b"}}"
            ),
            lambda: (
                b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":'
                + rng.choice([b"[]", b"{}", b'"x"', b"null"])
                + b"}"
            ),
            lambda: (
                b'{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":'
                + rng.choice([b"5", b'"\\ud800"', b"[]", b'"fz+x://y"'])
                + b"}}"
            ),
            lambda: (
                b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":'
                + rng.choice([b"[]", b"%ID%", b'"\\ud800"', b"1e999"])
                + b"}}"
            ),
            lambda: b'{"jsonrpc":"2.0","method":' + rng.choice([b"5", b'"\\ud800"', b'"x"', b"[]"]) + b',"params":{}}',
            lambda: (
                b'{"jsonrpc":"2.0","id":'
                + rng.choice([b'"\\ud800"', b"99999999999999999999999", b"-7", b'"s"'])
                + b',"method":'
                + rng.choice(
                    [
                        b'"sampling/createMessage"',
                        b'"roots/list"',
                        b'"elicitation/create"',
                        b'"ping"',
                        b'"nope"',
                        b'"\\udfff"',
                    ]
                )
                + b',"params":'
                + rng.choice([b"{}", b"[]", nested(900, rng), b'{"messages":"x","maxTokens":"y"}'])
                + b"}"
            ),
            lambda: b'{"jsonrpc":"2.0","id":' + json.dumps(gen.uid()).encode() + b',"method":"ping"}',
            # A request of the child's under the same id as the hub's call: ids of the two sides are their own.
            lambda: (
                b'{"jsonrpc":"2.0","id":%ID%,"method":'
                + rng.choice([b'"roots/list"', b"5", b'"ping"'])
                + b',"params":'
                + rng.choice([b"[]", b"{}", b'"p"'])
                + b"}"
            ),
            # What a host is asked for: relayed to the fuzzing host when it declared it (tests/fuzz/_drive.py).
            lambda: (
                b'{"jsonrpc":"2.0","id":'
                + json.dumps(gen.uid()).encode()
                + b',"method":'
                + rng.choice([b'"sampling/createMessage"', b'"elicitation/create"', b'"roots/list"'])
                + b',"params":'
                + rng.choice(
                    [
                        b"{}",
                        b'{"messages":[],"maxTokens":5}',
                        b'{"message":"\\ud800","requestedSchema":{}}',
                        nested(rng.choice([10, 900, 1100]), rng),
                        b'{"n":1e999}',
                    ]
                )
                + b"}"
            ),
            lambda: b"  \t \r",
        ]
        return rng.choice(choices)()

    def bad_answer(self) -> tuple[bytes, tuple[str, ...]]:
        """A line that answers the call, wrongly; and words the host's error must contain (any one of them)."""
        rng = self.rng
        head = b'{"jsonrpc":"2.0","id":%ID%'
        options: list[tuple[bytes, tuple[str, ...]]] = [
            (head + b',"result":{"content":[{"type":"text","text":"\xff\xfe"}]}}', ("UTF-8",)),
            (head + b',"result":' + nested(rng.choice([1100, 5000]), rng) + b"}", ("nested too deeply",)),
            (head + b',"result":' + rng.choice([b'"x"', b"[]", b"null", b"5"]) + b"}", ("invalid answer",)),
            (head + b',"error":' + rng.choice([b'"x"', b"[]", b"null", b"5"]) + b"}", ("invalid answer",)),
            (head + b',"result":{},"error":{"code":1,"message":"m"}}', ("invalid answer",)),
            (head + b"}", ("invalid answer",)),
            (b'{"jsonrpc":"1.0","id":%ID%,"result":{}}', ("invalid answer",)),
            (head + b',"result":{"content":[', ("invalid answer", "parse error")),
            (head + b',"result":{"content":"' + b"b" * (CHILD_MAX_RESULT + 100) + b'"}}', ("max_result_bytes",)),
            (
                b'{"jsonrpc":"2.0","result":{"content":"' + b"b" * (CHILD_MAX_RESULT + 100) + b'"},"id":%ID%}',
                ("max_result_bytes",),
            ),
        ]
        return rng.choice(options)

    def odd_answer(self) -> tuple[bytes, Check]:
        """A line that answers the call, oddly but usably (or not: then any one answer will do)."""
        rng = self.rng
        head = b'{"jsonrpc":"2.0","id":%ID%'
        options: list[tuple[bytes, Check]] = [
            (_ok("\ud800"), result_text("\ud800")),
            (  # an escaped surrogate pair is one character; a lone one stays itself
                head + b',"result":{"content":[{"type":"text","text":"\\ud83d\\ude00 and \\udfff"}]}}',
                result_text("\U0001f600 and \udfff"),
            ),
            (head + b',"result":{"content":[{"type":"text","text":"\xed\xa0\x80"}]}}', result_text("\ud800")),
            (
                head
                + b',"result":{"content":[{"type":"text","text":"a"}],"deep":'
                + nested(rng.choice([900, 950, 990]), rng)
                + b"}}",
                answered,
            ),
            (
                head
                + b',"result":'
                + rng.choice(
                    [
                        b'{"content":"x"}',
                        b'{"content":[{"type":5}]}',
                        b'{"isError":"yes"}',
                        b'{"_meta":[]}',
                        b'{"structuredContent":"s"}',
                    ]
                )
                + b"}",
                answered,
            ),
            (head + b',"result":{"content":[{"type":"text","text":"n"}],"n":NaN}}', answered),
            (
                head + b',"error":{"code":"x","message":5,"data":' + nested(rng.choice([10, 900]), rng) + b"}}",
                any_error,
            ),
            (head + b',"error":{"code":-32000,"message":"' + b"e" * 3000 + b'"}}', answered),
            (head + b',"error":{}}', any_error),
            (b"[" + _ok("in a batch") + b"]", result_text("in a batch")),
            (_ok("big " + "b" * 60000), result_text("big " + "b" * 60000)),
            (
                head
                + b',"result":{"resultType":"input_required","inputRequests":'
                + rng.choice(
                    [b"[]", b'{"a":5}', b'{"a":{"method":"sampling/createMessage","params":[]}}', b'{"a":{"method":5}}']
                )
                + b',"requestState":'
                + rng.choice([b"5", b'"s"', b"[]"])
                + b"}}",
                answered,
            ),
        ]
        return rng.choice(options)

    def draw(self) -> tuple[list[bytes], bool, Check]:
        """(lines, whether the child then answers as usual, the check of the host's one answer)."""
        rng = self.rng
        lines = [self.noise() for _ in range(rng.randrange(0, 4))]
        r = rng.random()
        check: Check
        if r < 0.35:
            check = result_text("emitted")
            answer = True
        elif r < 0.7:
            line, words = self.bad_answer()
            lines.append(line)
            check = tool_failure(*words)
            answer = rng.random() < 0.7  # the ordinary answer after the bad one is a duplicate: dropped
        else:
            line, check = self.odd_answer()
            lines.append(line)
            answer = rng.random() < 0.5  # a second answer: a duplicate, dropped
        if rng.random() < 0.3:
            lines += [self.noise() for _ in range(rng.randrange(1, 3))]
        return [line + b"\n" for line in lines], answer, check

    def asking(self) -> tuple[list[bytes], Any]:
        """A request of the child's for the host (relayed to the fuzzing host, which answers as it likes), the
        call answered only once the hub has answered it."""
        rng = self.rng
        ask_id = self.gen.uid()
        method = rng.choice(list(GOOD_ANSWERS))
        params = rng.choice([b"{}", b'{"messages":[],"maxTokens":5}', b'{"message":"\\ud800","requestedSchema":{}}'])
        line = b'{"jsonrpc":"2.0","id":%b,"method":"%b","params":%b}' % (
            json.dumps(ask_id).encode(),
            method.encode(),
            params,
        )
        return [self.noise() + b"\n" for _ in range(rng.randrange(0, 2))] + [line + b"\n"], ask_id

    def case(self, request_id: Any) -> Case:
        arguments: dict[str, Any]
        check: Check
        if self.rng.random() < self.asking_share:
            lines, ask_id = self.asking()
            arguments, check = {"await": ask_id}, answered
        else:
            lines, answer, check = self.draw()
            arguments = {"answer": answer}
        arguments["lines"] = [base64.b64encode(line).decode() for line in lines]
        params: dict[str, Any] = {"name": f"{PREFIX}_emit", "arguments": arguments}
        if self.rng.random() < 0.3:  # progress the child reports is relayed under this token
            params["_meta"] = {"progressToken": self.rng.choice([f"p{request_id}", self.gen.uid()])}
        body = request_bytes(request_id, "tools/call", params)
        return Case(body, "hostile child", Counter({request_id: 1}), check)


# ---- a host that answers the hub's requests -------------------------------------------------------------------

GOOD_ANSWERS: dict[str, dict[str, Any]] = {
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
    "elicitation/create": {"action": "accept", "content": {"a": "b"}},
    "roots/list": {"roots": [{"uri": "file:///x", "name": "x"}]},
}


def host_answers(seed: int) -> Callable[[dict[str, Any]], bytes | None]:
    """How the fuzzing host answers a request of the hub's (a child's sampling, elicitation, roots): well, badly,
    twice, under another id, or never. Each answer is drawn from the seed and the request, so a run repeats."""

    def answer(request: dict[str, Any]) -> bytes | None:
        rng = random.Random(f"{seed}:{request.get('id')!r}:{request.get('method')!r}")
        i = json.dumps(request.get("id")).encode()
        good = json.dumps(GOOD_ANSWERS.get(str(request.get("method")), {})).encode()
        head = b'{"jsonrpc":"2.0","id":' + i
        options: list[bytes | None] = [
            head + b',"result":' + good + b"}",
            head + b',"result":' + good + b"}",
            head + b',"error":{"code":-1,"message":"the user said no"}}',
            head + b',"result":' + rng.choice([b'"x"', b"[]", b"null", b"5"]) + b"}",
            head + b',"error":' + rng.choice([b'"x"', b"[]", b"{}", b'{"code":"x","message":[]}']) + b"}",
            head + b',"result":{},"error":{}}',
            head + b',"result":' + nested(rng.choice([900, 1100, 5000]), rng) + b"}",
            head + b',"result":{"content":"\xff\xfe"}}',
            head + b',"result":{"n":NaN}}',
            head + b',"result":{"text":"\\ud800","big":1e999}}',
            b'{"jsonrpc":"1.0","id":' + i + b',"result":{}}',
            (head + b',"result":' + good + b"}\n") * 2,
            b'{"jsonrpc":"2.0","id":"' + i.strip(b'"') + b'x","result":{}}',
            None,
        ]
        reply = rng.choice(options)
        return None if reply is None else reply.rstrip(b"\n") + b"\n"

    return answer

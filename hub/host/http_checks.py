"""What the HTTP front takes from the SDK: Host/Origin and Content-Type checks (`TransportSecurityMiddleware`, DNS-
rebinding protection), the 2026-07-28 rules for routing headers (`mcp.shared.inbound`), and the table of HTTP statuses
for JSON-RPC errors.

Importing the SDK is most of the HTTP front's start-up CPU, and the children are starting at the same time: so the front
listens first, and `Checks.load` imports the SDK in a worker thread meanwhile. A request that comes before it is
loaded waits for it (no request is served unchecked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request as HttpRequest
from starlette.types import Receive, Scope, Send

from hub.protocol import revisions
from hub.protocol.headers import NAMED, TASK_NAMED
from hub.protocol.jsonrpc import Request, quote

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")


@dataclass(frozen=True)
class Allowed:
    hosts: list[str]
    origins: list[str]


def allowed(host: str, port: int, extra: list[str]) -> Allowed:
    """Loopback names, the bound name and each --allow-host value, at the served port unless one is given; an
    --allow-host name without a port also as it is, since behind a proxy on 443 (or 80) hosts send the bare name."""
    names = [*LOOPBACK, *extra]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.append(host)
    hosts = [name if _has_port(name) else f"{name}:{port}" for name in names]
    hosts += [name for name in extra if not _has_port(name)]
    return Allowed(hosts, [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])


def _has_port(name: str) -> bool:
    return name.rpartition(":")[2].isdigit() and not name.endswith("]")


def _imports() -> tuple[Any, Any, Any]:
    from mcp.server import transport_security
    from mcp.shared import inbound

    return transport_security.TransportSecurityMiddleware, transport_security.TransportSecuritySettings, inbound


class Checks:
    def __init__(self, allowed: Allowed) -> None:
        self._allowed = allowed
        self._ready = anyio.Event()
        self._security: Any = None
        self._inbound: Any = None

    async def load(self) -> None:
        middleware, settings, inbound = await anyio.to_thread.run_sync(_imports)
        self._security = middleware(
            settings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=self._allowed.hosts,
                allowed_origins=self._allowed.origins,
            )
        )
        self._inbound = inbound
        self._ready.set()

    async def refused(self, scope: Scope, receive: Receive, send: Send, json_post: bool = True) -> bool:
        """Whether this request is refused, and then answered (bad Host or Origin: 421/403; with `json_post`, a POST
        not JSON: 400)."""
        await self._ready.wait()
        response = await self._security.validate_request(
            HttpRequest(scope), is_post=json_post and scope["method"] == "POST"
        )
        if response is not None:
            await response(scope, receive, send)
        return response is not None

    # Below: only after `refused`, so loaded.

    def status(self, code: Any) -> int:
        """A 2026-07-28 error's HTTP status (the SDK's table); 200 for codes it does not name."""
        status: int = self._inbound.ERROR_CODE_HTTP_STATUS.get(code, 200)
        return status

    def header_mismatch(
        self, raw: list[bytes], message: Request, headers: Mapping[str, str], tools: Sequence[Mapping[str, Any]]
    ) -> str | None:
        """What is wrong with a 2026-07-28 request's routing headers, if anything (the SDK's rules). `raw`: the
        request's header names as sent (repeats included); `tools`: the listed tools, whose input schemas say which
        arguments `Mcp-Param-*` headers must match."""
        for header in _ROUTING_HEADERS:
            if raw.count(header) > 1:
                return f"{header.decode()} header appears more than once"
        meta = message.params.get("_meta")
        envelope_version = meta.get(revisions.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        if envelope_version is not None and headers.get("mcp-protocol-version") != envelope_version:
            return "mcp-protocol-version header does not match the request envelope's protocol version"
        method = headers.get("mcp-method")
        if method != message.method:
            return _mismatch("Mcp-Method", method, message.method)
        # The revision's three must carry Mcp-Name; a task's request is checked when it does (the SDK's clients do
        # not send it yet).
        key = NAMED.get(message.method) or TASK_NAMED.get(message.method)
        value = message.params.get(key) if key is not None else None
        name = headers.get("mcp-name")
        checked = message.method in NAMED or name is not None
        if value is not None and checked and self._inbound.decode_header_value(name) != value:  # maybe base64
            return _mismatch("Mcp-Name", name, value, f"the body's {key!r}")
        if message.method != "tools/call":
            return None
        arguments = message.params.get("arguments") or {}
        if not isinstance(arguments, dict) or (not arguments and not any(k.startswith("mcp-param-") for k in headers)):
            return None
        name = message.params.get("name")
        schema = next((t.get("inputSchema") for t in tools if t.get("name") == name), None)
        rejection = None if schema is None else self._inbound.validate_mcp_param_headers(schema, arguments, headers)
        return None if rejection is None else str(rejection.message)


def _mismatch(header: str, sent: str | None, body: Any, field: str = "the body's method") -> str:
    """The -32020 message: the header missing, or its value against the body's (both quoted, cut short)."""
    if sent is None:
        return f"Header mismatch: the {header} header is missing; it must carry {field}, {quote(body)}"
    return f"Header mismatch: {header} header value {quote(sent)} does not match {field}, {quote(body)}"

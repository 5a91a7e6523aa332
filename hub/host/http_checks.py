"""What the HTTP front takes from the SDK: Host/Origin and Content-Type checks (`TransportSecurityMiddleware`, DNS-
rebinding protection), the 2026-07-28 rules for routing headers (`mcp.shared.inbound`), and the table of HTTP statuses
for JSON-RPC errors.

Importing the SDK is most of the HTTP front's start-up CPU, and the children are starting at the same time: so the front
listens first, and `Checks.load` imports the SDK in a worker thread meanwhile. A request that comes before it is
loaded waits for it (no request is served unchecked).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request as HttpRequest
from starlette.types import ASGIApp, Scope

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class Allowed:
    """The Host and Origin values the front accepts."""

    hosts: list[str]
    origins: list[str]


def allowed(host: str, port: int, extra: list[str]) -> Allowed:
    """Loopback names, the bound name and each --allow-host value, at the served port unless one is given; an
    --allow-host name without a port also as it is, since behind a proxy on 443 (or 80) hosts send the bare name."""
    names = [*LOOPBACK, *extra]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.append(host)
    hosts = [
        name if name.rpartition(":")[2].isdigit() and not name.endswith("]") else f"{name}:{port}" for name in names
    ]
    hosts += [name for name in extra if not (name.rpartition(":")[2].isdigit() and not name.endswith("]"))]
    return Allowed(hosts, [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])


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
        """Import the SDK's checks (in a worker thread) and make them ready."""
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

    async def refused(self, scope: Scope, json_post: bool = True) -> ASGIApp | None:
        """The response refusing this request (bad Host or Origin: 421/403; with `json_post`, a POST not JSON: 400),
        or None."""
        await self._ready.wait()
        response: ASGIApp | None = await self._security.validate_request(
            HttpRequest(scope), is_post=json_post and scope["method"] == "POST"
        )
        return response

    # Below: only after `refused`, so loaded.

    def status(self, code: Any) -> int:
        """A 2026-07-28 error's HTTP status (the SDK's table); 200 for codes it does not name."""
        status: int = self._inbound.ERROR_CODE_HTTP_STATUS.get(code, 200)
        return status

    def name_matches(self, header: str | None, value: Any) -> bool:
        """Whether an `Mcp-Name` header (maybe base64-wrapped) names `value`."""
        return bool(self._inbound.decode_header_value(header) == value)

    def param_mismatch(self, schema: Any, arguments: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
        """What is wrong with a tools/call's `Mcp-Param-*` headers against its arguments, if anything."""
        rejection = self._inbound.validate_mcp_param_headers(schema, arguments, headers)
        return None if rejection is None else str(rejection.message)

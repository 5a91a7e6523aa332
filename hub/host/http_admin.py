"""The HTTP front's administrative routes: `/healthz` (the hub is up), `/readyz` (whether a balancer may send it
new sessions: 503 while required children are not ready, or while draining), `/metrics` (Prometheus text) and
`POST /reload` (servers.yaml read again).

Who may use them: /healthz and /readyz anyone who reaches the front (a balancer's probe has no token). /metrics and
/reload, with `auth:`, the identities in the metrics or admin group (reload: admin only), wherever they connect
from; without `auth:`, /metrics anyone and /reload loopback only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from starlette.types import Scope, Send

from hub.access.identity import Identity
from hub.host.http_replies import JSON, insufficient_scope, reply
from hub.host.port import HubPort

# Who sent a request (None: refused, and answered): `HttpFront`'s, with the bearer token checked.
Caller = Callable[[Scope, dict[str, str], Send], Awaitable[Identity | None]]


class AdminRoutes:
    """The routes of the module docstring."""

    def __init__(self, hub: HubPort, caller: Caller) -> None:
        self.hub = hub
        self._caller = caller

    async def health(self, path: str, send: Send) -> None:
        hub = self.hub
        if path == "/healthz":
            await reply(send, 200, json.dumps({"status": "ok", "uptime_s": hub.health()["uptime_s"]}).encode())
        else:
            ready, servers = hub.readiness()
            body = {"ready": ready, "servers": servers, **({"draining": True} if hub.draining else {})}
            await reply(send, 200 if ready else 503, json.dumps(body).encode())

    async def _admitted(self, scope: Scope, send: Send, *groups: str) -> bool:
        """Whether an administrative request may go on (answered if not): with `auth:`, only identities in one of
        `groups`, wherever they connect from (behind a reverse proxy every peer is the proxy); without, loopback
        only."""
        config = self.hub.auth_config
        if config is None:
            if (scope.get("client") or ("", 0))[0] in ("127.0.0.1", "::1"):
                return True
            await reply(send, 403, b'{"error":"accepted from loopback only (or configure auth:)"}')
            return False
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        identity = await self._caller(scope, headers, send)
        if identity is None:
            return False
        if identity.in_any(set(groups)):
            return True
        await insufficient_scope(send, groups)
        return False

    async def metrics(self, scope: Scope, send: Send) -> None:
        auth = self.hub.auth_config
        if auth is not None and not await self._admitted(scope, send, auth.metrics_group, auth.admin_group):
            return
        assert self.hub.metrics is not None
        body, content_type = self.hub.metrics.render()
        await reply(send, 200, body, [(b"content-type", content_type.encode())])

    async def reload(self, scope: Scope, send: Send) -> None:
        hub = self.hub
        if scope["method"] != "POST":
            await reply(send, 405, b'{"error":"POST /reload"}', [*JSON, (b"allow", b"POST")])
        elif not await self._admitted(scope, send, hub.auth_config.admin_group if hub.auth_config else ""):
            return
        else:
            summary = await hub.reload_from_disk("POST /reload")
            if summary is None:
                await reply(send, 422, b'{"error":"the new configuration was rejected; see the hub\'s log"}')
            else:
                await reply(send, 200, json.dumps(summary).encode())

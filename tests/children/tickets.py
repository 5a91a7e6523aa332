"""An OAuth-protected MCP child and its authorization server, in one process (the SDK's `MCPServer` with an
`auth_server_provider`: the SDK's own server-side auth routes, metadata, registration, authorize, token).

Signing in is a person's choice: `/authorize` sends the browser to `/consent?tx=...`, and the test's browser adds
`&user=NAME` there, as a person would pick an account. Tokens issued from a code live `--first-ttl` seconds (0 by
default: expired at once, so the first use of a stored sign-in must refresh it); refreshed ones an hour. The
resource refuses an expired token with 401 (checked to the fraction of a second, not the SDK's whole seconds).

`GET /admin/stats` (no auth: a test's window into the server) tells what happened: registrations, sign-ins,
refreshes, every bearer token presented to the resource, and every access token issued. `POST /admin/revoke?user=`
revokes every token of a user. `POST /admin/hold` makes refreshes wait until `POST /admin/release`, so that a test
can have two refreshes meet. Refresh tokens rotate: each is good once, a second use is refused (`invalid_grant`).

Tools: `whoami` (the user the presented token belongs to) and `ticket` (a ticket for that user).
"""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REFRESHED_TTL = 3600


class Authority(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self, issuer: str, first_ttl: float) -> None:
        self.issuer = issuer
        self.first_ttl = first_ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[OAuthClientInformationFull, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, tuple[AccessToken, float]] = {}  # token -> (its record, exact expiry)
        self.refresh: dict[str, RefreshToken] = {}
        self.held: anyio.Event | None = None
        self.stats: dict[str, Any] = {
            "registered": 0,
            "signed_in": [],
            "refreshed": 0,
            "refreshing": 0,  # refreshes waiting for /admin/release
            "refused": 0,  # refreshes with a refresh token used before
            "presented": [],
            "issued": [],
            "client_tokens": 0,
        }

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.stats["registered"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        tx = secrets.token_urlsafe(16)
        self.pending[tx] = (client, params)
        return f"{self.issuer}/consent?tx={tx}"

    async def consent(self, request: Request) -> Response:
        found = self.pending.pop(request.query_params.get("tx", ""), None)
        user = request.query_params.get("user", "")
        if found is None or not user:
            return JSONResponse({"error": "unknown transaction or no user"}, status_code=400)
        client, params = found
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        self.stats["signed_in"].append(user)
        return RedirectResponse(construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state), 302)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(
            client,
            authorization_code.subject or "",
            authorization_code.scopes,
            self.first_ttl,
            authorization_code.resource,
        )

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.held is not None:  # /admin/hold: refreshes wait here until /admin/release
            self.stats["refreshing"] += 1
            await self.held.wait()
            self.stats["refreshing"] -= 1
        if self.refresh.pop(refresh_token.token, None) is None:  # rotated: each refresh token is good once
            self.stats["refused"] += 1
            raise TokenError("invalid_grant", "refresh token already used")
        self.stats["refreshed"] += 1
        return self._issue(
            client, refresh_token.subject or "", scopes or refresh_token.scopes, REFRESHED_TTL, refresh_token.resource
        )

    def _issue(
        self, client: OAuthClientInformationFull, user: str, scopes: list[str], ttl: float, resource: str | None
    ) -> OAuthToken:
        token, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = time.time() + ttl
        client_id = client.client_id or ""
        record = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(expires) + 1,
            resource=resource,
            subject=user,
        )
        self.access[token] = (record, expires)
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, subject=user, resource=resource
        )
        self.stats["issued"].append(token)
        return OAuthToken(
            access_token=token, expires_in=int(ttl), refresh_token=refresh, scope=" ".join(scopes) or None
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        self.stats["presented"].append(token)
        found = self.access.get(token)
        if found is None or time.time() >= found[1]:
            return None
        return found[0]

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def with_client_credentials(app: ASGIApp, authority: Authority, client: str | None) -> ASGIApp:
    """`app`, whose token endpoint also takes `grant_type=client_credentials` from the one `client` (ID:SECRET,
    in the form: client_secret_post); every other request passes through unchanged (its body replayed)."""
    client_id, _, client_secret = (client or "").partition(":")

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/token" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await app(scope, replay, send)
            return
        if not client_id or (form.get("client_id"), form.get("client_secret")) != (client_id, client_secret):
            answer = JSONResponse({"error": "invalid_client"}, status_code=401)
        else:
            registered = OAuthClientInformationFull(client_id=client_id, redirect_uris=None)
            scopes = form.get("scope", "").split()
            token = authority._issue(registered, f"client:{client_id}", scopes, REFRESHED_TTL, form.get("resource"))
            authority.stats["client_tokens"] += 1
            answer = JSONResponse(token.model_dump(mode="json", exclude_none=True))
        await answer(scope, receive, send)

    return wrapped


def _admin_routes(server: MCPServer[Any], authority: Authority) -> None:
    """The test's window into the authorization server, without auth: revoke, hold and release refreshes, stats."""

    async def revoke(request: Request) -> Response:
        """Revoke every token of `?user=` (an administrator of the authorization server ending a person's grants);
        with `&only=access`, only the access tokens (the resource forgetting them: the refresh tokens still work)."""
        user = request.query_params.get("user", "")
        gone = [t for t, (record, _) in authority.access.items() if record.subject == user]
        if request.query_params.get("only") != "access":
            gone += [t for t, record in authority.refresh.items() if record.subject == user]
        for token in gone:
            authority.access.pop(token, None)
            authority.refresh.pop(token, None)
        return JSONResponse({"revoked": len(gone)})

    async def hold(request: Request) -> Response:
        """Refreshes wait from now on (counted in stats' `refreshing`) until `/admin/release`."""
        authority.held = anyio.Event()
        return JSONResponse({"held": True})

    async def release(request: Request) -> Response:
        if authority.held is not None:
            authority.held.set()
            authority.held = None
        return JSONResponse({"held": False})

    async def stats(request: Request) -> Response:
        return JSONResponse(authority.stats)

    server.custom_route("/admin/revoke", methods=["POST"])(revoke)
    server.custom_route("/admin/hold", methods=["POST"])(hold)
    server.custom_route("/admin/release", methods=["POST"])(release)
    server.custom_route("/admin/stats", methods=["GET"])(stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--first-ttl", type=float, default=0.0)
    parser.add_argument("--client", default=None, help="ID:SECRET of a client that may use client_credentials")
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    authority = Authority(origin, args.first_ttl)
    server = MCPServer(
        "tickets",
        auth_server_provider=authority,
        auth=AuthSettings(
            issuer_url=origin,  # type: ignore[arg-type]
            resource_server_url=f"{origin}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=True,  # RFC 8707: a token issued for another resource is refused
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The user this request's token belongs to."""
        token = get_access_token()
        return token.subject or "" if token is not None else ""

    @server.tool()
    def ticket(title: str) -> str:
        """Open a ticket as the signed-in user."""
        token = get_access_token()
        return f"ticket '{title}' opened by {token.subject if token else '?'}"

    @server.tool()
    async def wait(seconds: float, ctx: Context) -> str:
        """Wait `seconds`, then answer with the user; progress at the start (calls in flight at once overlap)."""
        await ctx.report_progress(0, 1)
        await anyio.sleep(seconds)
        token = get_access_token()
        return token.subject or "" if token is not None else ""

    server.custom_route("/consent", methods=["GET"])(authority.consent)

    _admin_routes(server, authority)

    app = with_client_credentials(server.streamable_http_app(), authority, args.client)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(web.serve, [sock])
            while not web.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
                await anyio.sleep(0.02)
            print(f"tickets listening on {origin}/mcp", file=sys.stderr, flush=True)
            tmp = args.port_file.with_name(args.port_file.name + ".tmp")
            tmp.write_text(origin)
            tmp.replace(args.port_file)

    anyio.run(serve)


if __name__ == "__main__":
    main()

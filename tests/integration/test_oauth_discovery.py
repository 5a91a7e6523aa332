"""The MCP SDK's own OAuth client finds the organisation's authorization server through the hub, and gets in.

A real `hub serve --http` with `auth: jwt:`, and an authorization server built from the SDK's server-side auth
routes (`create_auth_routes`) over an in-memory provider that approves every request at once and issues RS256 JWTs
(it publishes their key as a JWKS too). The SDK's `OAuthClientProvider` starts knowing only the hub's URL: the
hub's 401 names its protected-resource metadata (RFC 9728), which names the authorization server; the client reads
that server's metadata (RFC 8414), registers itself (RFC 7591), authorizes with PKCE for the hub's URL as resource
(RFC 8707), exchanges the code for a token, and calls a tool, which the hub admits and logs as the token's subject.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import jwt
import mcp_types as types
import pytest
import uvicorn
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.children import python_child
from tests.support.logs import log_events
from tests.support.processes import serve_hub_http
from tests.support.system import free_port
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

SUBJECT = "oauth-user"
GROUP = "cooks"
KID = "as-key-1"
# Where the authorization server sends the browser back; nothing listens there: the test reads the redirect itself.
REDIRECT_URI = "http://127.0.0.1/callback"


class AutoApprovingServer(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """An authorization server's state, in memory: anyone who asks is `oauth-user` of group `cooks` at once (no
    login page), and gets an RS256 JWT for the hub. `seen` counts the steps of the flow it was taken through."""

    def __init__(self, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.seen: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.seen["register"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.seen["authorize"] += 1
        if params.resource != self.audience:  # RFC 8707: this server issues tokens for the hub only
            raise AuthorizeError("invalid_target", f"tokens are issued for {self.audience} only")
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.seen["token"] += 1
        del self.codes[authorization_code.code]  # a code is good once
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": authorization_code.subject,
            "groups": [GROUP],
            "client_id": client.client_id,
            "iat": now,
            "exp": now + 300,
        }
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KID})
        return OAuthToken(access_token=token, expires_in=300, scope=" ".join(authorization_code.scopes) or None)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return None  # none are issued

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise TokenError("invalid_grant", "no refresh tokens are issued here")

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # the hub verifies the JWTs itself, against the JWKS

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        pass

    async def jwks(self, request: Request) -> JSONResponse:
        self.seen["jwks"] += 1
        public = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return JSONResponse({"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]})


class MemoryStorage:
    """The SDK client's `TokenStorage`, in memory: it starts empty, so the client has to discover everything."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The user's browser, as the SDK client's redirect and callback handlers: it opens the authorization URL,
    which this authorization server answers with a redirect at once, and hands back the code and state it carries."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self._landed: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        self.opened.append(authorization_url)
        async with httpx2.AsyncClient(timeout=WAIT, follow_redirects=False) as http:
            answer = await http.get(authorization_url)
        assert answer.status_code == 302, answer.text
        location = answer.headers["location"]
        assert location.startswith(REDIRECT_URI + "?"), location
        query = parse_qs(urlsplit(location).query)
        self._landed = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self._landed is not None, "the authorization URL was never opened"
        landed, self._landed = self._landed, None
        return landed


@asynccontextmanager
async def serve_app(app: Starlette, sock: socket.socket) -> AsyncIterator[None]:
    """uvicorn serving `app` on an already bound loopback socket, in this event loop; stopped on exit (bounded)."""
    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [sock])
        try:
            with anyio.fail_after(WAIT):
                while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                    await anyio.sleep(0.01)
            yield
        finally:
            server.should_exit = True
            tasks.cancel_scope.deadline = anyio.current_time() + 15


def hub_config(directory: Path, issuer: str, audience: str, jwks_url: str) -> Path:
    path = directory / "servers.yaml"
    document = {
        "auth": {"jwt": {"issuer": issuer, "audience": audience, "jwks_url": jwks_url, "groups_claim": "groups"}},
        "policies": [{"name": "cooks", "groups": [GROUP], "allow": ["kitchen_*"]}],
        "default_policy": "deny",
        "servers": {"kitchen": python_child("tests.children.kitchen")},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


async def test_the_sdk_oauth_client_discovers_the_authorization_server_through_the_hub(tmp_path: Path) -> None:
    hub_port = free_port()
    hub_url = f"http://127.0.0.1:{hub_port}/mcp"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        as_origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
        # pydantic renders a path-less URL with a trailing slash: that rendering is the issuer the AS metadata
        # states, so it is the one its tokens carry and the hub's config names.
        issuer_url = AnyHttpUrl(as_origin)
        issuer = str(issuer_url)
        authority = AutoApprovingServer(issuer, audience=hub_url)
        routes = create_auth_routes(
            authority, issuer_url, client_registration_options=ClientRegistrationOptions(enabled=True)
        )
        app = Starlette(routes=[*routes, Route("/jwks", authority.jwks)])
        config = hub_config(tmp_path, issuer, audience=hub_url, jwks_url=f"{as_origin}/jwks")
        log = tmp_path / "hub.log"

        storage = MemoryStorage()
        browser = Browser()
        oauth = OAuthClientProvider(
            server_url=hub_url,
            client_metadata=OAuthClientMetadata(client_name="discovery-test", redirect_uris=[AnyUrl(REDIRECT_URI)]),
            storage=storage,
            redirect_handler=browser.open,
            callback_handler=browser.callback,
        )
        http = create_mcp_http_client(auth=oauth)
        transport = streamable_http_client(hub_url, http_client=http)
        with anyio.fail_after(2 * WAIT):
            async with (
                serve_app(app, sock),
                serve_hub_http(config, log, port=hub_port),
                http,
                Client(transport, mode="legacy", read_timeout_seconds=WAIT) as client,
            ):
                result = await client.call_tool("kitchen_echo", {"text": "hi"})

    assert not result.is_error
    assert [block.text for block in result.content if isinstance(block, types.TextContent)] == ["hi"]
    # The client went through the authorization server the hub named (a different origin than the hub's), once.
    assert authority.seen["register"] == 1 and authority.seen["authorize"] == 1 and authority.seen["token"] == 1
    assert authority.seen["jwks"] >= 1  # the hub checked the token against the published key
    assert len(browser.opened) == 1 and browser.opened[0].startswith(f"{as_origin}/authorize?")
    assert storage.client_info is not None and storage.client_info.client_id in authority.clients
    assert storage.tokens is not None
    line = next(e for e in log_events(log, "call") if e["name"] == "kitchen_echo")
    assert (line["identity"], line["auth"], line["rule"]) == (SUBJECT, "jwt", "cooks")
    assert storage.tokens.access_token not in log.read_text()

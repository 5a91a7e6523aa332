"""One refresh at a time per identity and OAuth child, across the hub's connections, processes and replicas; and a
token the child refuses is refreshed once before anyone is asked to sign in again (decision 012).

`OneRefresh` wraps the SDK's provider: a request that finds the token due takes the record's refresh lock
(`Credentials.refreshing`), reads the record again, and takes the tokens another connection stored meanwhile or lets
the provider refresh under the lock; a request with a valid token never waits on it. A 401 to an unexpired token is
sent again once after a refresh (a 401 comes before the request was acted on); a refresh token refused with
`invalid_grant` forgets the sign-in (`Credentials.refused`), any other refresh failure keeps it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import httpx2

from hub.config.schema import ServerConfig
from hub.upstream import oauth_sdk
from hub.upstream.oauth import CLIENT, Credentials, SignInRequired

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult

REFRESH_SKEW = 30.0  # seconds before its expiry a token is refreshed


async def connection_auth(
    credentials: Credentials,
    child: str,
    config: ServerConfig,
    identity: str,
    groups: frozenset[str],
    ended: Callable[[str], None],
    *,
    shared: bool,
) -> OneRefresh:
    """The `httpx2.Auth` a connection of `identity` sends its requests through (the SDK's provider over the
    identity's record in `credentials`, refreshing once at a time); it never opens a browser.

    Raises:
        SignInRequired: the identity has not signed in (the message says how to).
    """
    assert config.oauth is not None
    if config.oauth.grant == "client_credentials":
        return OneRefresh(await credentials.client_provider(child, config), credentials, child, CLIENT, None)
    if await credentials.signed(child, identity) is None:
        raise SignInRequired(await credentials.sign_in_hint(child, identity, groups, shared=shared))

    async def end(why: str) -> None:
        ended(f"{await credentials.sign_in_hint(child, identity, groups, shared=shared)} ({why})")
        raise SignInRequired(f"identity '{identity}' must sign in to server '{child}' again")

    async def never() -> AuthorizationCodeResult:
        raise SignInRequired(f"identity '{identity}' must sign in to server '{child}' again")

    # The SDK would send the person to a browser: the connection ends with the hint now, rather than let its
    # requests wait for a browser that never opens.
    refused = "the stored sign-in was refused by the authorization server"
    callback = "http://127.0.0.1/oauth/callback"
    provider = await credentials.provider(child, config, identity, callback, lambda _: end(refused), never)
    return OneRefresh(provider, credentials, child, identity, lambda: end("its sign-in was removed"))


@dataclass
class OneRefresh(httpx2.Auth):
    provider: OAuthClientProvider
    credentials: Credentials
    child: str
    identity: str
    # The identity's record was removed (hub auth logout): ends the connection, raising. None (the hub's own client
    # credentials): a new token is simply asked for, and a 401 is the SDK's to handle.
    gone: Callable[[], Awaitable[None]] | None

    def _due(self) -> bool:
        expiry = oauth_sdk.expiry(self.provider)
        return expiry is not None and time.time() > expiry - REFRESH_SKEW

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        refused: str | None = None  # the access token the child refused with 401, once
        while True:
            async with AsyncExitStack() as held:
                if self._due() or refused is not None:
                    await held.enter_async_context(self.credentials.refreshing(self.child, self.identity))
                    await self._take_stored(refused)
                flow = self.provider.async_auth_flow(request)
                try:
                    outgoing = await flow.__anext__()
                    while True:
                        if outgoing is request:
                            await held.aclose()  # the refresh is over: the request itself is sent without the lock
                        response = yield outgoing
                        if outgoing is request and refused is None and self._may_retry(request, response):
                            refused = _bearer(request)
                            break  # once more, after a refresh (the flow below is closed first)
                        # The SDK's own requests (a refresh, discovery); never the host's, whose bodies go unread.
                        if outgoing is not request and (tried := _refresh_token_of(outgoing)) is not None:
                            await self._after_refresh(tried, response)
                        outgoing = await flow.asend(response)
                except StopAsyncIteration:
                    return
                finally:
                    await flow.aclose()

    def _may_retry(self, request: httpx2.Request, response: httpx2.Response) -> bool:
        """A 401 to a token the hub holds as good, with a refresh token to try: worth one more go before a browser."""
        tokens = oauth_sdk.held_tokens(self.provider)
        return (
            response.status_code == 401
            and self.gone is not None
            and tokens is not None
            and bool(tokens.refresh_token)
            and _bearer(request) == tokens.access_token
        )

    async def _take_stored(self, refused: str | None) -> None:
        """The record's tokens if another connection refreshed them meanwhile (and they are not the ones the child
        just refused); else the provider refreshes now."""
        from mcp.shared.auth import OAuthToken

        signed = await self.credentials.signed(self.child, self.identity)
        fresh = signed is not None and (signed.expires_at is None or signed.expires_at > time.time() + REFRESH_SKEW)
        if signed is None and self.gone is not None:
            await self.gone()  # signed out: a refresh here would store the record again
        elif signed is not None and fresh and signed.tokens.get("access_token") != refused:
            oauth_sdk.adopt(self.provider, OAuthToken.model_validate(signed.tokens), signed.expires_at)
        else:
            # The provider refreshes now; after a 401, with the record's refresh token (the latest).
            latest = OAuthToken.model_validate(signed.tokens) if signed is not None and refused is not None else None
            oauth_sdk.refresh_next(self.provider, latest)

    async def _after_refresh(self, tried: str, response: httpx2.Response) -> None:
        if response.status_code != 400 or self.gone is None:
            return
        try:
            error = json.loads(await response.aread()).get("error")
        except (ValueError, AttributeError):
            return
        if error == "invalid_grant":
            await self.credentials.refused(self.child, self.identity, tried)


def _bearer(request: httpx2.Request) -> str | None:
    value = request.headers.get("authorization", "")
    return value[7:] if value[:7].lower() == "bearer " else None


def _refresh_token_of(request: httpx2.Request) -> str | None:
    """The refresh token a request to a token endpoint presents (grant_type=refresh_token), else None."""
    if request.method != "POST" or b"grant_type=refresh_token" not in request.content:
        return None
    values = parse_qs(request.content.decode(errors="replace")).get("refresh_token")
    return values[0] if values else None

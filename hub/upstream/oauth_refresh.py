"""One refresh at a time per identity and OAuth child, across the hub's connections and replicas.

The SDK's provider refreshes an expired token by itself, but each provider alone: two connections of one identity
(the shared connection and that identity's own; or two replicas) that find the token expired together both
refresh, and where the authorization server rotates refresh tokens the second is refused, which ends its
connection with a sign-in hint although the identity's sign-in is fine. `OneRefresh` wraps the provider: a request
that finds the token expired (or within REFRESH_SKEW of it) first takes the record's refresh lock
(`Credentials.refreshing`: in the process, and in Redis across replicas), reads the record again, and either takes
the tokens another connection stored meanwhile or lets the provider refresh while it holds the lock. Requests with
a valid token go straight through the provider, never waiting on the lock.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import httpx2

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider

    from hub.upstream.oauth import Credentials

REFRESH_SKEW = 30.0  # seconds before its expiry a token is refreshed


class OneRefresh(httpx2.Auth):
    def __init__(
        self,
        provider: OAuthClientProvider,
        credentials: Credentials,
        child: str,
        identity: str,
        gone: Callable[[], Awaitable[None]] | None,
    ) -> None:
        self.provider = provider
        self.credentials = credentials
        self.child = child
        self.identity = identity
        # The identity's record was removed (hub auth logout): ends the connection, raising. None (the hub's own
        # client credentials): a new token is simply asked for.
        self.gone = gone

    def _due(self) -> bool:
        expiry = self.provider.context.token_expiry_time
        return expiry is not None and time.time() > expiry - REFRESH_SKEW

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with AsyncExitStack() as held:
            if self._due():
                await held.enter_async_context(self.credentials.refreshing(self.child, self.identity))
                await self._take_stored()
            flow = self.provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    if outgoing is request:
                        await held.aclose()  # the refresh is over: the request itself is sent without the lock
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    async def _take_stored(self) -> None:
        """The record's tokens if another connection refreshed them meanwhile; else the provider refreshes now."""
        from mcp.shared.auth import OAuthToken

        context = self.provider.context
        signed = await self.credentials.signed(self.child, self.identity)
        if signed is None and self.gone is not None:
            await self.gone()  # signed out: a refresh here would store the record again
        elif signed is not None and (signed.expires_at is None or signed.expires_at > time.time() + REFRESH_SKEW):
            context.current_tokens = OAuthToken.model_validate(signed.tokens)
            context.token_expiry_time = signed.expires_at
        elif context.token_expiry_time is not None:
            context.token_expiry_time = min(context.token_expiry_time, time.time() - 1)  # refresh within the skew

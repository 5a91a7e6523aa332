"""One identity signing in to one OAuth child: the browser part, shared by the HTTP front's sign-in links
(`hub.host.http_oauth`) and `hub auth login` (a loopback listener). The flow is the SDK's (`OAuthClientProvider`):
`show` hands the person the authorization URL, `landed` returns the code the browser brings back to `redirect_uri`.
Every wait is bounded (SIGN_IN_SECONDS).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from hub.config.schema import ServerConfig
from hub.protocol.revisions import LATEST_HANDSHAKE
from hub.upstream.oauth import Credentials

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

SIGN_IN_SECONDS = 600.0  # from the link (or command) to the browser coming back
EXCHANGE_SECONDS = 30.0  # each request of the flow: discovery, registration, token exchange


class SignInFailed(Exception):
    """The sign-in did not give the identity tokens; the message says why (never a token)."""


async def sign_in(
    credentials: Credentials,
    child: str,
    config: ServerConfig,
    identity: str,
    redirect_uri: str,
    show: Callable[[str], Awaitable[None]],
    landed: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> None:
    """Sign `identity` in to `child` afresh: its previous sign-in, if any, is replaced once the new one has tokens,
    and kept if this one fails or is abandoned.

    Raises:
        SignInFailed: the child is not OAuth-protected, the authorization server refused, or time ran out.
    """
    import httpx2
    from mcp.client.auth import OAuthFlowError, OAuthTokenError

    assert config.url is not None
    before = await credentials.signed(child, identity)
    provider = await credentials.provider(child, config, identity, redirect_uri, show, landed, fresh=True)
    # A ping outside any session: a protected child refuses it with 401 before anything else, which starts the
    # flow; once signed in, the SDK sends it again and whatever the child answers (often 400: no session) is fine.
    probe = {"jsonrpc": "2.0", "id": "hub-sign-in", "method": "ping"}
    headers = {
        **config.headers,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LATEST_HANDSHAKE,
    }
    try:
        with anyio.fail_after(SIGN_IN_SECONDS + EXCHANGE_SECONDS):
            async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(EXCHANGE_SECONDS)) as http:
                await http.post(config.url, json=probe, headers=headers)
    except TimeoutError:
        raise SignInFailed(f"the sign-in to server '{child}' was not completed within {SIGN_IN_SECONDS:g}s") from None
    except (OAuthFlowError, OAuthTokenError) as exc:
        raise SignInFailed(f"the authorization server of server '{child}' refused: {exc}") from None
    except httpx2.HTTPError as exc:
        raise SignInFailed(f"server '{child}' or its authorization server cannot be reached: {exc}") from None
    after = await credentials.signed(child, identity)
    if after is None or (before is not None and after.tokens == before.tokens):
        raise SignInFailed(f"server '{child}' did not ask for a sign-in (is it OAuth-protected at {config.url}?)")

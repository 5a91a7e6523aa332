"""The one place the hub reads and writes the state the SDK's OAuth provider keeps in memory (`provider.context`)
instead of going through its public API (`TokenStorage`, which the provider reads once, on its first request). No
other module of hub/ does. Why, in decision 012: the stored tokens' expiry (python-sdk#3250: `restore_expiry`),
tokens another connection stored meanwhile (`adopt`), and a refresh now after a 401 (python-sdk#2875:
`refresh_next`). Fixing #3250 removes `restore_expiry`; a public way to have the provider read its storage again
before a refresh, and refresh on a 401, removes the rest.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthToken


def restore_expiry(provider: OAuthClientProvider, expires_at: float | None) -> None:
    """Give a provider that has not made a request yet the stored tokens' absolute expiry (python-sdk#3250)."""
    provider.context.token_expiry_time = expires_at


def expiry(provider: OAuthClientProvider) -> float | None:
    """When the provider holds its access token to expire (wall clock); None: it holds no expiry."""
    return provider.context.token_expiry_time


def held_tokens(provider: OAuthClientProvider) -> OAuthToken | None:
    """The tokens the provider sends and refreshes with now."""
    return provider.context.current_tokens


def adopt(provider: OAuthClientProvider, tokens: OAuthToken, expires_at: float | None) -> None:
    """Use `tokens` (stored by another connection since this provider read its storage) from the next request on."""
    provider.context.current_tokens = tokens
    provider.context.token_expiry_time = expires_at


def refresh_next(provider: OAuthClientProvider, tokens: OAuthToken | None = None) -> None:
    """Have the provider refresh before its next request, with the refresh token of `tokens` when given (the latest
    one stored), else with the one it holds."""
    if tokens is not None:
        provider.context.current_tokens = tokens
    provider.context.token_expiry_time = time.time() - 1

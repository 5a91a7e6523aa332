"""The one place the hub reads and writes the state the SDK's OAuth provider keeps in memory (`provider.context`:
`current_tokens`, `token_expiry_time`) instead of going through its public API. No other module of hub/ does.

Why. The provider's public API is `TokenStorage` (mcp.client.auth), and the hub's records do go through it
(`hub.upstream.oauth._Storage`). But the provider reads that storage once, on its first request (`_initialize`),
and then trusts what it holds in memory. Three things the hub needs have no other way in:

- **The expiry of stored tokens.** `_initialize` loads the tokens without their expiry, so an expired token is sent,
  refused with 401, and the SDK starts a browser flow instead of refreshing (python-sdk#3250; also #1318). The hub
  keeps the absolute expiry in its record and gives it to the provider before its first use: `restore_expiry`.
- **Tokens another connection stored.** Two connections of one identity (or two hubs, two replicas) share one record;
  where refresh tokens rotate, only one may refresh. The one that waited takes the tokens the other stored (`adopt`)
  rather than refresh again with a refresh token that is now dead. The provider has no "read the storage again".
- **A refresh now.** A token the child refused with 401 before its expiry is refreshed once before anyone is asked to
  sign in again (the SDK goes to a browser at once: python-sdk#2875): `refresh_next`.

What would remove this module. python-sdk#3250 fixed (the expiry restored in `_initialize`, as python-sdk#3248 and
#3251 proposed, with an absolute `expires_at` on the stored token) removes `restore_expiry`. A public way to have the
provider read its `TokenStorage` again before a refresh (and to refresh on a 401 when it holds a refresh token,
python-sdk#2875) removes `adopt` and `refresh_next`, and with them the reads below.
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

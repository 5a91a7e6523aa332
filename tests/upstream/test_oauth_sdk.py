"""The adapter over the SDK OAuth provider's in-memory state (hub.upstream.oauth_sdk), against the SDK itself: what
it writes is what the provider goes by; and no other module of hub/ touches that state."""

from __future__ import annotations

import re
import time
from pathlib import Path

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from hub.upstream import oauth_sdk

HUB = Path(__file__).resolve().parent.parent.parent / "hub"


class NoStorage:
    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        return None

    async def get_client_info(self) -> None:
        return None

    async def set_client_info(self, client_info: object) -> None:
        return None


def provider() -> OAuthClientProvider:
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1/oauth/callback")])
    return OAuthClientProvider("https://tickets.example/mcp", metadata, NoStorage())


def test_what_the_adapter_writes_is_what_the_provider_goes_by() -> None:
    held = provider()
    oauth_sdk.restore_expiry(held, time.time() - 5)
    assert oauth_sdk.expiry(held) is not None and oauth_sdk.held_tokens(held) is None

    stored = OAuthToken(access_token="a2", refresh_token="r2", expires_in=60)
    oauth_sdk.adopt(held, stored, time.time() + 60)
    assert oauth_sdk.held_tokens(held) is stored
    assert held.context.is_token_valid()

    latest = OAuthToken(access_token="a3", refresh_token="r3")
    oauth_sdk.refresh_next(held, latest)
    assert oauth_sdk.held_tokens(held) is latest
    assert not held.context.is_token_valid(), "the provider refreshes before its next request"
    oauth_sdk.refresh_next(held)
    assert oauth_sdk.held_tokens(held) is latest and not held.context.is_token_valid()


def test_no_other_module_of_hub_touches_the_providers_state() -> None:
    state = re.compile(r"\b(current_tokens|token_expiry_time)\b|provider\.context\b")
    touching = [
        str(path.relative_to(HUB))
        for path in HUB.rglob("*.py")
        if path.name != "oauth_sdk.py" and state.search(path.read_text())
    ]
    assert touching == [], "the SDK provider's state is hub.upstream.oauth_sdk's alone"

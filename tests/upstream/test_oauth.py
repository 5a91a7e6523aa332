"""Where OAuth children's sign-ins are kept (hub.upstream.oauth): sealed records in files, one per record; sign-in
links that only this hub can make, good once and for a while; the configuration keys that go with them."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from hub.access import sealed
from hub.config.schema import ServerConfig
from hub.upstream.oauth import LINKS, TOKENS, Credentials, FileVault, SignInRequired
from hub.upstream.oauth_refresh import connection_auth

pytestmark = pytest.mark.anyio


def credentials(directory: Path) -> Credentials:
    vault = FileVault(directory)

    async def key() -> bytes:
        return vault.key()

    return Credentials(vault, key)


def server(**oauth: object) -> ServerConfig:
    return ServerConfig.model_validate({"url": "https://tickets.example/mcp", "oauth": oauth})


async def test_a_record_is_stored_sealed_in_a_private_file_and_read_back(tmp_path: Path) -> None:
    kept = credentials(tmp_path / "oauth")
    token = OAuthToken(access_token="access-secret-1", refresh_token="refresh-secret-1", expires_in=60)
    before = time.time()
    await kept.store_tokens("tickets", "alice", token, {"client_id": "c1"})

    signed = await kept.signed("tickets", "alice")
    assert signed is not None and signed.tokens["access_token"] == "access-secret-1"
    assert signed.client == {"client_id": "c1"}
    assert signed.expires_at is not None and before + 60 <= signed.expires_at <= time.time() + 60
    assert await kept.signed("tickets", "bob") is None
    for path in (tmp_path / "oauth").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert b"secret-1" not in path.read_bytes()
    assert stat.S_IMODE((tmp_path / "oauth").stat().st_mode) == 0o700
    assert [(s.child, s.identity) for s in await kept.everyone()] == [("tickets", "alice")]

    # Another process with the same directory (the hub after `hub auth login`) reads it with the key kept there.
    again = credentials(tmp_path / "oauth")
    assert (await again.signed("tickets", "alice")) == signed
    assert await again.forget("tickets", "alice") and not await again.forget("tickets", "alice")
    assert await again.signed("tickets", "alice") is None


async def test_a_record_sealed_under_another_key_or_purpose_is_not_read(tmp_path: Path) -> None:
    kept = credentials(tmp_path / "oauth")
    await kept.store_tokens("tickets", "alice", OAuthToken(access_token="a"), None)
    os.remove(tmp_path / "oauth" / "key")
    assert await credentials(tmp_path / "oauth").signed("tickets", "alice") is None
    key = os.urandom(32)
    assert sealed.unseal(key, sealed.seal(key, {"c": "x"}, LINKS), TOKENS) is None


async def test_a_sign_in_link_is_this_hubs_and_expires(tmp_path: Path) -> None:
    kept = credentials(tmp_path / "oauth")
    assert await kept.link("tickets", "alice", frozenset()) is None  # no HTTP front: no link
    kept.link_base = "https://hub.example"
    link = await kept.link("tickets", "alice", frozenset({"ops"}))
    assert link is not None and link.startswith("https://hub.example/oauth/start?link=")
    token = link.partition("link=")[2]
    payload = await kept.open_link(token)
    assert payload is not None and (payload["c"], payload["i"], payload["g"]) == ("tickets", "alice", ["ops"])
    assert await credentials(tmp_path / "elsewhere").open_link(token) is None  # another hub's key
    assert await kept.open_link(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]) is None
    late = sealed.seal(await kept.key(), {"c": "tickets", "i": "alice", "x": time.time() - 1}, LINKS)
    assert await kept.open_link(late) is None


async def test_a_connection_without_a_sign_in_says_how_to_sign_in(tmp_path: Path) -> None:
    kept = credentials(tmp_path / "oauth")
    with pytest.raises(SignInRequired, match=r"run `hub auth login tickets --as svc` where the hub runs"):
        await connection_auth(kept, "tickets", server(), "svc", frozenset(), lambda _: None, shared=True)
    kept.link_base = "https://hub.example"
    with pytest.raises(SignInRequired, match=r"identity 'alice' has not signed in .* open https://hub\.example/"):
        await connection_auth(kept, "tickets", server(), "alice", frozenset(), lambda _: None, shared=False)


def test_oauth_keys_are_checked() -> None:
    assert server(scope="read write").oauth is not None
    with pytest.raises(ValidationError, match="client_secret needs client_id"):
        server(client_secret="s")
    with pytest.raises(ValidationError, match="oauth only applies to URL children"):
        ServerConfig.model_validate({"command": "x", "oauth": {}})
    with pytest.raises(ValidationError, match="not sign in to SSE"):
        ServerConfig.model_validate({"url": "https://t.example/sse", "oauth": {}})
    with pytest.raises(ValidationError, match="needs client_id, client_secret and issuer"):
        server(grant="client_credentials", client_id="c", client_secret="s")
    machine = {"grant": "client_credentials", "client_id": "c", "client_secret": "s", "issuer": "https://a.example"}
    assert server(**machine).oauth is not None
    with pytest.raises(ValidationError, match="not per-identity"):
        ServerConfig.model_validate({"url": "https://t.example/mcp", "sessions": "per-identity", "oauth": machine})
    with pytest.raises(ValidationError, match="sets the Authorization header itself"):
        ServerConfig.model_validate({"url": "https://t.example/mcp", "headers": {"Authorization": "x"}, "oauth": {}})

"""OAuth to URL children, per identity (decision 012): the SDK's `OAuthClientProvider` runs the flow; the hub keeps
each identity's tokens, and its own registrations, sealed (`hub.access.sealed`) in a `Vault`: files (`FileVault`) or
Redis (`hub.state`). A connection never opens a browser: an identity with no record gets `SignInRequired`, naming how
to sign in (`hub.upstream.signin` is the interactive part). The inbound token of the hub's own front is never sent on.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import anyio
import structlog

from hub.access import sealed
from hub.config.schema import ServerConfig
from hub.platform.filelock import Held, file_lock
from hub.platform.files import replace_file
from hub.protocol import errors
from hub.upstream import oauth_sdk
from hub.upstream.credentials import MissingCredential

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

TOKENS = b"hub:oauth-tokens:v1"  # purpose of the key that seals records
LINKS = b"hub:oauth-links:v1"  # purpose of the key that seals sign-in links
LINK_SECONDS = 600  # how long a sign-in link is good for (and at most once)
KEY_FILE = "key"  # FileVault: the key beside the records when `state.key` is not given
KEY_BYTES = 32
LOCK_SECONDS = 30.0  # FileVault: how long a refresh of another process is waited for
_log = structlog.get_logger("hub.oauth")

CLIENT = "*"  # whose record holds a client-credentials token: the hub's own, for every identity


class SignInRequired(MissingCredential):
    """The identity has no usable sign-in to an OAuth child: the message says how to sign in."""


class Vault(Protocol):
    """Where sealed records are kept, by name. Values are opaque sealed text; names are not secret."""

    async def read(self, name: str) -> str | None: ...

    async def write(self, name: str, value: str | None) -> None:
        """None removes the record."""

    async def names(self) -> list[str]: ...

    def lock(self, name: str) -> AbstractAsyncContextManager[None]:
        """Held while one of the hub's processes refreshes the record `name` (across replicas, where shared)."""


class FileVault:
    """One file per record in `directory` (0700; files 0600, each replaced atomically): the hub refreshing one
    identity's tokens and `hub auth login` storing another's never write the same file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, name: str) -> Path:
        return self.directory / (hashlib.sha256(name.encode()).hexdigest()[:32] + ".json")

    async def read(self, name: str) -> str | None:
        document = _document(self._path(name))
        value = document.get("sealed") if document is not None and document.get("name") == name else None
        return value if isinstance(value, str) else None

    async def write(self, name: str, value: str | None) -> None:
        path = self._path(name)
        if value is None:
            path.unlink(missing_ok=True)
            return
        self._ensure_directory()
        replace_file(path, json.dumps({"name": name, "sealed": value}).encode(), 0o600)

    async def names(self) -> list[str]:
        paths = sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []
        return [d["name"] for d in map(_document, paths) if d is not None and isinstance(d.get("name"), str)]

    @asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """Held by one process at a time: one person's hubs (a stdio hub per desktop host) share these files, and
        two of them refreshing one record at once would have the second refresh refused where refresh tokens rotate.
        A holder slower than LOCK_SECONDS makes the waiter give up with an error, never hang."""
        self._ensure_directory()
        try:
            waiting = functools.partial(_log.info, "oauth_refresh_waits", record=name.replace("\x00", "/"))
            async with file_lock(self._path(name).with_suffix(".lock"), LOCK_SECONDS, waiting):
                yield
        except Held:  # only its taking raises it
            raise errors.Unavailable(f"another hub held the refresh of {name!r} over {LOCK_SECONDS:g} s") from None

    def key(self) -> bytes:
        """The key beside the records, made (random, 0600) the first time; for a hub without `state.key`."""
        self._ensure_directory()
        path = self.directory / KEY_FILE
        if not path.exists():
            # Written whole under another name, then linked into place (which fails if another process was first):
            # nobody ever reads a key half written.
            temporary = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
            with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                file.write(secrets.token_bytes(KEY_BYTES))
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        key = path.read_bytes()
        if len(key) != KEY_BYTES:
            raise OSError(f"{path} is not a key of {KEY_BYTES} bytes: remove it (every sign-in kept beside it is lost)")
        return key

    def _ensure_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)


def _document(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


@dataclass(frozen=True)
class Signed:
    """What is kept of one identity's sign-in to one child (never logged)."""

    child: str
    identity: str
    tokens: dict[str, Any]
    expires_at: float | None  # wall clock; None: the server gave no expiry
    client: dict[str, Any] | None  # the registration the tokens were issued to


def _tokens_name(child: str, identity: str) -> str:
    return f"tokens\x00{child}\x00{identity}"


def _parts(name: str) -> tuple[str, str, str]:
    """A record's name as (kind, child, the identity or redirect URI): the inverse of the two names below."""
    kind, _, rest = name.partition("\x00")
    child, _, last = rest.partition("\x00")
    return kind, child, last


def _client_name(child: str, redirect_uri: str) -> str:
    return f"client\x00{child}\x00{redirect_uri}"


class Credentials:
    """The OAuth records of every (child, identity), sealed under `key` in `vault`.

    `link_base` is the hub's origin as browsers reach it (set by the HTTP front): with it, an identity that must
    sign in is given a one-time link; without it (stdio), the `hub auth login` command to run.
    """

    def __init__(self, vault: Vault, key: Callable[[], Awaitable[bytes]]) -> None:
        self.vault = vault
        self._get_key = key
        self._known: bytes | None = None  # the key, once read (made on first use: a hub with no OAuth child never)
        self.link_base: str | None = None
        self._refreshing: dict[str, anyio.Lock] = {}  # one per record whose tokens a connection refreshed

    async def key(self) -> bytes:
        if self._known is None:
            self._known = await self._get_key()
        return self._known

    # ---- records -------------------------------------------------------------------------------------------------

    async def read_record(self, name: str) -> dict[str, Any] | None:
        text = await self.vault.read(name)
        return None if text is None else sealed.unseal(await self.key(), text, TOKENS)

    async def write_record(self, name: str, value: dict[str, Any]) -> None:
        await self.vault.write(name, sealed.seal(await self.key(), value, TOKENS))

    async def signed(self, child: str, identity: str) -> Signed | None:
        record = await self.read_record(_tokens_name(child, identity))
        if record is None or not isinstance(record.get("tokens"), dict):
            return None
        expires = record.get("expires_at")
        return Signed(
            child,
            identity,
            record["tokens"],
            expires if isinstance(expires, float | int) else None,
            record.get("client") if isinstance(record.get("client"), dict) else None,
        )

    async def store_tokens(self, child: str, identity: str, tokens: OAuthToken, client: dict[str, Any] | None) -> None:
        expires = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        record = {"tokens": tokens.model_dump(mode="json", exclude_none=True), "expires_at": expires, "client": client}
        await self.write_record(_tokens_name(child, identity), record)

    async def forget(self, child: str, identity: str) -> bool:
        """Remove an identity's sign-in; whether there was one."""
        name = _tokens_name(child, identity)
        had = await self.vault.read(name) is not None
        await self.vault.write(name, None)
        return had

    async def refused(self, child: str, identity: str, refresh_token: str) -> bool:
        """The authorization server refused `refresh_token` for good (`invalid_grant`: revoked, expired, used): the
        identity's sign-in is forgotten if it still holds that refresh token (a newer sign-in is kept), so that it
        is shown as signed out and nothing sends the dead token again. Whether it was forgotten."""
        signed = await self.signed(child, identity)
        if signed is None or signed.tokens.get("refresh_token") != refresh_token:
            return False
        await self.vault.write(_tokens_name(child, identity), None)
        _log.info("oauth_sign_in_refused", server=child, identity=identity)
        return True

    @asynccontextmanager
    async def refreshing(self, child: str, identity: str) -> AsyncIterator[None]:
        """Held while an identity's tokens are refreshed: with rotating refresh tokens, a second refresh at the same
        time (another connection, another replica) would be refused and end its connection for nothing."""
        name = _tokens_name(child, identity)
        lock = self._refreshing.setdefault(name, anyio.Lock())
        async with lock, self.vault.lock(name):
            yield

    async def redirect_uris(self, child: str) -> list[str]:
        """The redirect URIs the hub is registered with at `child`'s authorization server (one registration each)."""
        return [
            uri
            for kind, registered, uri in map(_parts, await self.vault.names())
            if (kind, registered) == ("client", child)
        ]

    async def everyone(self) -> list[Signed]:
        records = [await self.signed(c, i) for kind, c, i in map(_parts, await self.vault.names()) if kind == "tokens"]
        return [signed for signed in records if signed is not None]

    # ---- the SDK's provider ------------------------------------------------------------------------------------

    async def provider(
        self,
        child: str,
        config: ServerConfig,
        identity: str,
        redirect_uri: str,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
        *,
        fresh: bool = False,
    ) -> OAuthClientProvider:
        """The SDK's OAuth client for `identity` at `child`, over this identity's record; `fresh`: for a new sign-in,
        which neither uses the stored record nor replaces it until new tokens arrive."""
        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata
        from pydantic import AnyUrl

        assert config.url is not None and config.oauth is not None
        settings = config.oauth
        metadata = OAuthClientMetadata(
            client_name=settings.client_name,
            redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=settings.scope,
            token_endpoint_auth_method="client_secret_post" if settings.client_secret else "none",
        )
        storage = _Storage(self, child, config, identity, redirect_uri, fresh)
        provider = OAuthClientProvider(config.url, metadata, storage, redirect_handler, callback_handler)
        return provider if fresh else await self._restored(provider, child, identity)

    async def client_provider(self, child: str, config: ServerConfig) -> OAuthClientProvider:
        """The SDK's client-credentials provider: the hub's own token, kept like an identity's under CLIENT."""
        from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

        settings = config.oauth
        assert config.url is not None and settings is not None
        assert settings.client_id is not None and settings.client_secret is not None
        storage = _Storage(self, child, config, CLIENT, "")
        provider = ClientCredentialsOAuthProvider(
            config.url,
            storage,
            settings.client_id,
            settings.client_secret,
            "client_secret_post",
            settings.scope,
            settings.issuer,
        )
        return await self._restored(provider, child, CLIENT)

    async def _restored(self, provider: OAuthClientProvider, child: str, identity: str) -> OAuthClientProvider:
        """`provider` told the stored tokens' expiry, which the SDK does not load (python-sdk#3250, oauth_sdk)."""
        signed = await self.signed(child, identity)
        if signed is not None:
            oauth_sdk.restore_expiry(provider, signed.expires_at)
        return provider

    # ---- how to sign in ----------------------------------------------------------------------------------------

    async def sign_in_hint(self, child: str, identity: str, groups: frozenset[str], *, shared: bool) -> str:
        command = f"hub auth login {child} --as {identity}"
        if shared:
            return (
                f"server '{child}' needs the hub's own identity '{identity}' to sign in (OAuth): run `{command}` "
                "where the hub runs"
            )
        link = await self.link(child, identity, groups)
        where = f"open {link} in a browser (good for {LINK_SECONDS // 60} minutes)" if link else f"run `{command}`"
        return f"identity '{identity}' has not signed in to server '{child}' (OAuth): {where}, then try again"

    async def link(self, child: str, identity: str, groups: frozenset[str]) -> str | None:
        if self.link_base is None:
            return None
        payload = {
            "c": child,
            "i": identity,
            "g": sorted(groups),
            "x": time.time() + LINK_SECONDS,
            "n": secrets.token_urlsafe(12),
        }
        token = sealed.seal(await self.key(), payload, LINKS)
        return f"{self.link_base}/oauth/start?link={quote(token)}"

    async def open_link(self, token: str) -> dict[str, Any] | None:
        """A link's payload (child, identity, groups, nonce) if this hub made it and it has not expired."""
        payload = sealed.unseal(await self.key(), token, LINKS)
        if payload is None or not isinstance(payload.get("x"), float | int) or payload["x"] < time.time():
            return None
        return payload


@dataclass
class _Storage:
    """The SDK's `TokenStorage` over one identity's record: tokens are stored with the client they were issued to;
    the client is the configured `client_id` if there is one, else that identity's, else the hub's registration for
    the redirect URI."""

    credentials: Credentials
    child: str
    config: ServerConfig
    identity: str
    redirect_uri: str
    # A sign-in in progress: the identity's stored record is neither used nor touched until new tokens come.
    fresh: bool = False
    client: dict[str, Any] | None = None

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        if self.fresh:
            return None
        signed = await self.credentials.signed(self.child, self.identity)
        if signed is None:
            return None
        if self.client is None:
            self.client = signed.client
        return OAuthToken.model_validate(signed.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        client = None if self.config.oauth is not None and self.config.oauth.client_id is not None else self.client
        await self.credentials.store_tokens(self.child, self.identity, tokens, client)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        settings = self.config.oauth
        if settings is not None and settings.client_id is not None:
            # The configured client, as the configuration says now (a rotated secret is used at once).
            self.client = {
                "client_id": settings.client_id,
                "client_secret": settings.client_secret,
                "redirect_uris": [self.redirect_uri],
                "token_endpoint_auth_method": "client_secret_post" if settings.client_secret else "none",
            }
        if self.client is None and not self.fresh:
            signed = await self.credentials.signed(self.child, self.identity)
            self.client = signed.client if signed is not None else None
        if self.client is None:
            self.client = await self.credentials.read_record(_client_name(self.child, self.redirect_uri))
        return None if self.client is None else OAuthClientInformationFull.model_validate(self.client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info.model_dump(mode="json", exclude_none=True)
        await self.credentials.write_record(_client_name(self.child, self.redirect_uri), self.client)

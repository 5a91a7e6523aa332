"""JWT access tokens of the organisation's OpenID provider, checked against the keys it publishes (its JWKS).

`JwtVerifier.verify(token)` returns who the token speaks for (`Verified`) or raises `JwtRejected` with a short reason
that never quotes the token (it goes to logs and metrics); `verify_token` is the same check as the MCP SDK's
`TokenVerifier`. A token is accepted only when all of these hold:
- its header's `alg` is on the allow-list, checked before any key is looked up. Asymmetric algorithms only: `none`
  accepts an unsigned token, and with HMAC a verifier holding only the provider's *public* keys could be talked into
  using one as the shared secret (algorithm confusion). Both are refused at construction too;
- its signature verifies with the JWKS key whose `kid` is the header's (no `kid`: only when the JWKS holds one key).
  Keys come only from the configured JWKS URL, never from the token (`jku`, `jwk`, `x5u` are ignored); symmetric
  (`oct`), private and encryption-only keys of a JWKS are never used;
- `iss` equals the issuer; `aud` (a string or a list) contains the audience, the hub's own URL (RFC 8707);
- `exp` is present and not past, `nbf` and `iat` not in the future, each with `leeway_s` of clock skew;
- `sub` is a non-empty string.

The JWKS is fetched on first use and kept. An unknown `kid` (the provider may have rotated its keys) fetches it again
at most once per `refetch_interval_s`: anyone can send made-up key ids, and the hub must not relay that flood to the
provider. Verifications share one fetch at a time; a failed one (bounded by `fetch_timeout_s`) keeps the last keys.

Groups come from `groups_claim` (a claim of that exact name, else a dotted path: `realm_access.roles`): a list of
strings, or one string of names separated by spaces or commas. Scopes come from `scope` (space separated, RFC 9068)
or `scp` (a list, or a string). `failures` counts rejections by kind (the reason up to its first colon);
`fetches` counts JWKS fetch attempts, failed ones included.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import jwt
import structlog
from jwt.algorithms import get_default_algorithms
from jwt.types import Options
from mcp.server.auth.provider import AccessToken

from hub.access import ALGORITHMS

# A JWK set is a few kilobytes; a larger answer is not one (and is not read into memory whole).
JWKS_LIMIT = 1 << 20
# An error's text in a rejection reason and the log is cut here.
ERROR_LIMIT = 200
# Groups are separated by spaces or commas when the claim is one string; scopes by spaces only (RFC 6749 §3.3).
_GROUP_SEPARATORS = re.compile(r"[\s,]+")
_SCOPE_SEPARATORS = re.compile(r"\s+")

# Signature and claims are checked separately: PyJWT checks the signature (and decodes the payload), this module
# every claim, against the injected clock and with reasons of its own.
_SIGNATURE_ONLY: Options = {
    "verify_signature": True,
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
    "verify_aud": False,
    "verify_iss": False,
    "verify_sub": False,
    "verify_jti": False,
    "enforce_minimum_key_length": True,
}


class JwtRejected(Exception):
    """A token is not accepted; `reason` says why in a few words and never contains the token."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = reason.split(":", 1)[0]  # a bounded label: "JWKS unavailable: HTTP 503" is "JWKS unavailable"


@dataclass(frozen=True)
class Verified:
    """Who an accepted token speaks for."""

    subject: str
    groups: tuple[str, ...]
    scopes: tuple[str, ...]
    expires_at: int | None
    claims: dict[str, Any] = field(hash=False)


class _Unavailable(Exception):
    """A JWKS fetch failed; the message is the short detail of "JWKS unavailable: ..."."""


@dataclass(frozen=True)
class _Key:
    jwk: jwt.PyJWK
    kid: str | None
    alg: str | None  # the JWK's own `alg`, when it names one: a token must then use exactly that algorithm


def _find(keys: tuple[_Key, ...], kid: str | None) -> _Key | None:
    if kid is None:
        return keys[0] if len(keys) == 1 else None
    return next((key for key in keys if key.kid == kid), None)


def _checked_algorithms(algorithms: tuple[str, ...]) -> frozenset[str]:
    if not algorithms:
        raise ValueError("at least one JWT algorithm is needed")
    supported = get_default_algorithms()
    for alg in algorithms:
        if alg.lower() == "none" or alg.upper().startswith("HS"):
            raise ValueError(f"JWT algorithm {alg!r} is refused: only asymmetric signatures are accepted")
        if alg not in supported:
            raise ValueError(f"JWT algorithm {alg!r} is not supported (known: {', '.join(sorted(supported))})")
    return frozenset(algorithms)


def _parse_jwks(body: bytes) -> tuple[_Key, ...]:
    """The usable signing keys of a JWK set; `_Unavailable` when it is not one or holds none."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise _Unavailable("not JSON") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise _Unavailable("not a JWK set (no 'keys' list)")
    keys: list[_Key] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") == "oct" or "d" in entry:
            continue  # not a key; a shared secret; a private key (a JWKS is public: skip it rather than use it)
        if entry.get("use", "sig") != "sig":
            continue  # an encryption key
        try:
            jwk = jwt.PyJWK(entry)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            continue  # an unsupported key type, curve or algorithm, or broken key material
        kid, alg = entry.get("kid"), entry.get("alg")
        keys.append(_Key(jwk, kid if isinstance(kid, str) else None, alg if isinstance(alg, str) else None))
    if not keys:
        raise _Unavailable("no usable signing key in the JWK set")
    return tuple(keys)


def _strings(value: Any, name: str, separators: re.Pattern[str]) -> tuple[str, ...]:
    """A claim of names: absent, a list of strings, or one string of separated names."""
    if value is None:
        return ()
    if isinstance(value, str):
        names = [part for part in separators.split(value) if part]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        names = value
    else:
        raise JwtRejected(f"malformed {name} claim")
    return tuple(dict.fromkeys(names))


def _lookup(claims: dict[str, Any], path: str) -> Any:
    """A claim by its exact name, else by a dotted path into nested objects; None if absent."""
    if path in claims:
        return claims[path]
    node: Any = claims
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JwtRejected(f"malformed {name} claim")
    return float(value)


@dataclass(eq=False)
class JwtVerifier:
    """An MCP SDK `TokenVerifier` (see the module's docstring)."""

    issuer: str
    audience: str
    jwks_url: str
    groups_claim: str = "groups"
    algorithms: tuple[str, ...] = ALGORITHMS
    leeway_s: float = 30.0
    fetch_timeout_s: float = 5.0
    refetch_interval_s: float = 60.0
    clock: Callable[[], float] = time.time
    failures: dict[str, int] = field(default_factory=dict, init=False)
    fetches: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.issuer or not self.audience or not self.groups_claim:
            raise ValueError("issuer, audience and groups_claim must not be empty")
        if not self.jwks_url.startswith(("https://", "http://")):
            raise ValueError("jwks_url must be an http:// or https:// URL")
        if self.leeway_s < 0 or self.fetch_timeout_s <= 0 or self.refetch_interval_s < 0:
            raise ValueError("leeway_s and refetch_interval_s must be >= 0, fetch_timeout_s > 0")
        self._allowed = _checked_algorithms(tuple(self.algorithms))
        self._lock = anyio.Lock()
        self._keys: tuple[_Key, ...] | None = None
        self._fetched_at: float | None = None
        self._attempts_done = 0  # fetches finished (well or not): a waiter that sees it move does not fetch again
        self._fetch_error = "not fetched yet"
        self._log = structlog.get_logger("hub.access")

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier`: the token's access, or None if it is refused (`failures` counts why)."""
        try:
            verified = await self.verify(token)
        except JwtRejected:
            return None
        claims = verified.claims
        client_id = next(
            (value for value in (claims.get("client_id"), claims.get("azp")) if isinstance(value, str) and value),
            verified.subject,
        )
        return AccessToken(
            token=token,
            client_id=client_id,
            scopes=list(verified.scopes),
            expires_at=verified.expires_at,
            resource=self.audience,
            subject=verified.subject,
            claims=claims,
        )

    async def verify(self, token: str) -> Verified:
        """Who the token speaks for; `JwtRejected` if it is not accepted."""
        try:
            alg, kid = self._header(token)
            claims = self._decode(token, await self._key_for(kid), alg)
            expires = self._check_claims(claims)
            groups = _strings(_lookup(claims, self.groups_claim), "groups", _GROUP_SEPARATORS)
            scope = claims.get("scope")
            scopes = _strings(claims.get("scp") if scope is None else scope, "scope", _SCOPE_SEPARATORS)
        except JwtRejected as rejected:
            self.failures[rejected.kind] = self.failures.get(rejected.kind, 0) + 1
            raise
        return Verified(claims["sub"], groups, scopes, int(expires), claims)

    def _header(self, token: str) -> tuple[str, str | None]:
        """The header's algorithm, allowed, and key id; nothing is looked up before the algorithm passes."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise JwtRejected("malformed token") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._allowed:
            raise JwtRejected("algorithm not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise JwtRejected("malformed token")
        return alg, kid

    def _decode(self, token: str, key: _Key, alg: str) -> dict[str, Any]:
        """The payload, once the signature verifies with `key` under `alg`."""
        if key.alg is not None and key.alg != alg:
            raise JwtRejected("key does not fit algorithm")
        try:
            return jwt.decode(token, key.jwk.key, algorithms=[alg], options=_SIGNATURE_ONLY)
        except jwt.InvalidSignatureError:
            raise JwtRejected("bad signature") from None
        except jwt.InvalidAlgorithmError:
            raise JwtRejected("algorithm not allowed") from None
        except (jwt.InvalidKeyError, TypeError):  # an RSA key for ES256, a P-256 key for ES384, a too short key
            raise JwtRejected("key does not fit algorithm") from None
        except jwt.PyJWTError:
            raise JwtRejected("malformed token") from None

    def _check_claims(self, claims: dict[str, Any]) -> float:
        """The expiry, once every claim checks out."""
        if claims.get("iss") != self.issuer:
            raise JwtRejected("wrong issuer")
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or self.audience not in audiences:
            raise JwtRejected("wrong audience")
        now = self.clock()
        expires, not_before, issued = _number(claims, "exp"), _number(claims, "nbf"), _number(claims, "iat")
        if expires is None:
            raise JwtRejected("missing expiry")
        if expires <= now - self.leeway_s:
            raise JwtRejected("expired")
        if not_before is not None and not_before > now + self.leeway_s:
            raise JwtRejected("not yet valid")
        if issued is not None and issued > now + self.leeway_s:
            raise JwtRejected("issued in the future")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise JwtRejected("missing subject")
        return expires

    async def _key_for(self, kid: str | None) -> _Key:
        """The JWKS key for `kid`, fetching the JWKS first if it never was, or again if `kid` is new to it."""
        attempts = self._attempts_done
        keys = self._keys
        key = None if keys is None else _find(keys, kid)
        if key is None and (keys is None or kid is not None):
            await self._refresh(attempts)
            keys = self._keys
            if keys is None:
                raise JwtRejected(f"JWKS unavailable: {self._fetch_error}")
            key = _find(keys, kid)
        if key is None:
            raise JwtRejected("unknown key id" if kid is not None else "no key id and more than one key")
        return key

    async def _refresh(self, attempts: int) -> None:
        """Fetch the JWKS, unless a fetch finished since the caller looked (`attempts`) or one began too recently."""
        async with self._lock:
            if self._attempts_done != attempts:
                return
            now = self.clock()
            if self._fetched_at is not None and 0 <= now - self._fetched_at < self.refetch_interval_s:
                return
            self._fetched_at = now
            self.fetches += 1
            try:
                self._keys = _parse_jwks(await self._download())
                self._fetch_error = ""
            except _Unavailable as exc:
                self._fetch_error = str(exc)
                self._log.warning("jwks_fetch_failed", url=self.jwks_url, error=self._fetch_error)
            finally:
                self._attempts_done += 1

    async def _download(self) -> bytes:
        """The JWKS document's bytes, within `fetch_timeout_s` in all; `_Unavailable` with the reason otherwise."""
        try:
            with anyio.fail_after(self.fetch_timeout_s):
                async with (
                    httpx2.AsyncClient(timeout=self.fetch_timeout_s) as http,
                    http.stream("GET", self.jwks_url, headers={"Accept": "application/json"}) as response,
                ):
                    if response.status_code != 200:
                        raise _Unavailable(f"HTTP {response.status_code}")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > JWKS_LIMIT:
                            raise _Unavailable(f"answer larger than {JWKS_LIMIT} bytes")
                    return bytes(body)
        except TimeoutError:
            raise _Unavailable(f"no answer within {self.fetch_timeout_s:g}s") from None
        except (httpx2.HTTPError, httpx2.InvalidURL, OSError) as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise _Unavailable(detail[:ERROR_LIMIT]) from None

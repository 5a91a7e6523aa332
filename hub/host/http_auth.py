"""Who is calling the HTTP front: a bearer token checked against the token file or the organisation's JWT keys.

`Authenticator.identify` turns a request's `Authorization: Bearer ...` header into an `Identity`, or into the
answer that refuses it: 401 with `WWW-Authenticate: Bearer resource_metadata=...` (RFC 9728), so that an MCP
client finds the organisation's authorization server by itself; 400 for a token in the URL (proxies and access
logs keep URLs). It follows the configuration as it is now: a reload that changes `auth:` applies to the next
request. No token, and nothing derived from one, is ever logged or quoted in an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import parse_qs

import structlog
from starlette.types import Scope, Send

from hub.access.identity import ANONYMOUS, Identity
from hub.access.jwt import JwtRejected, JwtVerifier
from hub.access.tokens import PREFIX, Rejected, TokenFile, TokenFileError
from hub.config.access import AuthConfig, JwtConfig
from hub.host.http_replies import error
from hub.host.port import HubPort
from hub.logs import Throttle

MCP = "/mcp"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
# A header this long is not a token any provider issues; it is refused before any work is done on it.
MAX_TOKEN_CHARS = 16384

_log = structlog.get_logger("hub.auth")


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str  # RFC 6750: invalid_request, invalid_token, insufficient_scope
    description: str
    reason: str  # for the log and metrics: missing, malformed, unknown, expired, jwt, in_url, forbidden


class Authenticator:
    def __init__(self, hub: HubPort) -> None:
        self.hub = hub
        self._tokens: TokenFile | None = None
        self._jwt: tuple[JwtConfig, JwtVerifier] | None = None
        self._refused = Throttle()

    async def identify(self, headers: dict[str, str], query: bytes) -> Identity | Refusal:
        """The caller of a request, or why it is refused (counted, and logged at most once a second). Without
        `auth:` every caller is `anonymous`."""
        config = self.hub.auth_config
        if config is None:
            return ANONYMOUS
        found = await self._identify(config, headers, query)
        if isinstance(found, Refusal):
            if self.hub.metrics is not None:
                self.hub.metrics.rejection("unauthenticated")
                self.hub.metrics.auth_failure(found.reason)
            if self._refused.tick():
                _log.warning("http_unauthenticated", reason=found.reason, refused=self._refused.count)
        return found

    async def _identify(self, config: AuthConfig, headers: dict[str, str], query: bytes) -> Identity | Refusal:
        if query and _token_in_url(query):
            return Refusal(400, "invalid_request", "tokens are accepted in the Authorization header only", "in_url")
        header = headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if not header:
            return Refusal(401, "", "authentication required", "missing")
        if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
            return Refusal(401, "invalid_request", "expected 'Authorization: Bearer TOKEN'", "malformed")
        if config.tokens is not None and (token.startswith(PREFIX) or config.jwt is None):
            return self._check_static(token)
        if config.jwt is not None:
            return await self._check_jwt(config.jwt, token)
        return Refusal(401, "invalid_token", "the token is not valid", "unknown")

    def _check_static(self, token: str) -> Identity | Refusal:
        path = self.hub.token_path
        assert path is not None
        if self._tokens is None or self._tokens.path != path:
            self._tokens = TokenFile(path)
        try:
            found = self._tokens.check(token)
        except TokenFileError as exc:
            _log.error("token_file_unreadable", error=str(exc))
            return Refusal(401, "invalid_token", "the token is not valid", "token_file")
        if isinstance(found, Rejected):
            why = "the token has expired" if found.reason == "expired" else "the token is not valid"
            return Refusal(401, "invalid_token", why, f"token_{found.reason}")
        return found

    async def _check_jwt(self, config: JwtConfig, token: str) -> Identity | Refusal:
        if self._jwt is None or self._jwt[0] != config:
            verifier = JwtVerifier(
                issuer=config.issuer,
                audience=config.audience,
                jwks_url=config.jwks_url,
                groups_claim=config.groups_claim,
                algorithms=config.algorithms,
                leeway_s=config.leeway,
            )
            self._jwt = (config, verifier)
        try:
            verified = await self._jwt[1].verify(token)
        except JwtRejected as exc:
            return Refusal(401, "invalid_token", f"the token is not valid: {exc.reason}", "jwt")
        return Identity(verified.subject, frozenset(verified.groups), "jwt")

    # ---- RFC 9728 -----------------------------------------------------------------------------------------------

    def resource(self, scope: Scope) -> str:
        """The hub's URL as clients know it: the JWT audience when there is one (it must be the hub's own URL),
        else the MCP endpoint at the host the request was addressed to."""
        config = self.hub.auth_config
        if config is not None and config.jwt is not None:
            return config.jwt.audience
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
        return f"{scope.get('scheme', 'http')}://{host}{MCP}"

    def metadata(self, scope: Scope) -> bytes:
        config = self.hub.auth_config
        document: dict[str, object] = {
            "resource": self.resource(scope),
            "bearer_methods_supported": ["header"],
            "resource_name": "hub",
        }
        if config is not None and config.jwt is not None:
            document["authorization_servers"] = [config.jwt.issuer]
        return json.dumps(document).encode()

    async def refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        """Answer a refused request: its status, and on a 401 the challenge."""
        challenge = self.challenge(self.resource(scope), refusal)
        extra = [(b"www-authenticate", challenge)] if refusal.status == 401 else []
        await error(send, refusal.status, f"Unauthorized: {refusal.description}", extra=extra)

    @staticmethod
    def challenge(resource: str, refusal: Refusal) -> bytes:
        """The `WWW-Authenticate` value of a refusal: where the resource metadata is, and what went wrong."""
        scheme, _, address = resource.partition("://")
        origin, _, path = address.partition("/")
        metadata = f"{scheme}://{origin}{WELL_KNOWN}" + (f"/{path}" if path else "")
        parts = [f'resource_metadata="{metadata}"']
        if refusal.error:
            parts += [f'error="{refusal.error}"', f'error_description="{refusal.description}"']
        return ("Bearer " + ", ".join(parts)).encode()


def _token_in_url(query: bytes) -> bool:
    try:
        keys = parse_qs(query.decode("latin-1"), keep_blank_values=True)
    except ValueError:
        return False
    return any(k.lower() in ("access_token", "token", "api_key", "apikey") for k in keys)

"""`auth:` (static tokens, the organisation's JWTs, the groups of the administrative routes) and `policies:` of
servers.yaml; `hub.access` applies them."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from hub.access import ALGORITHMS
from hub.config.model import Strict


class JwtConfig(Strict):
    """Access tokens issued by the organisation's OpenID provider, checked against its published keys."""

    issuer: str = Field(description="The provider's issuer URL: a token's `iss` must equal it.")
    audience: str = Field(description="The hub's own URL (RFC 8707): a token's `aud` must contain it.")
    jwks_url: str = Field(description="Where the provider publishes its signing keys (JWKS).")
    groups_claim: str = Field(default="groups", description="The claim holding the groups (a dotted path allowed).")
    algorithms: tuple[str, ...] = Field(default=ALGORITHMS, description="Signature algorithms accepted.")
    leeway: float = Field(default=30.0, ge=0, le=300, description="Seconds of clock skew allowed on exp and nbf.")

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or any(a not in ALGORITHMS for a in value):
            raise ValueError(f"algorithms may only be among {', '.join(ALGORITHMS)} (never none or HS*)")
        return value

    @field_validator("issuer", "jwks_url", "audience")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"https?://", value):
            raise ValueError("must be an http:// or https:// URL")
        return value


class AuthConfig(Strict):
    """Who may use the HTTP front: static tokens, the organisation's JWTs, or both."""

    tokens: str | None = Field(default=None, description="The token file of `hub token` (relative: to servers.yaml).")
    jwt: JwtConfig | None = None
    admin_group: str = Field(default="admin", description="Members may POST /reload, read /metrics and GET /.")
    metrics_group: str = Field(default="metrics", description="Members may read /metrics.")
    status_group: str = Field(default="status", description="Members may read the status page (GET /).")

    @model_validator(mode="after")
    def _some_method(self) -> AuthConfig:
        if self.tokens is None and self.jwt is None:
            raise ValueError("auth needs 'tokens' (a token file) and/or 'jwt' (an OpenID provider)")
        return self


class PolicyRule(Strict):
    """Which exposed names (tools, prompts, resource URIs) the identities a rule matches may see and use."""

    name: str = Field(description="Named in the call log as the rule that decided.")
    subjects: tuple[str, ...] = Field(default=(), description="Identity names (token name, JWT sub); '*' = all.")
    groups: tuple[str, ...] = Field(default=(), description="Groups whose members the rule matches.")
    allow: tuple[str, ...] = Field(default=(), description="Globs over exposed names this rule allows.")
    deny: tuple[str, ...] = Field(default=(), description="Globs over exposed names this rule denies; deny wins.")
    max_concurrency: int | None = Field(default=None, ge=1, description="Requests in flight at once, per identity.")
    requests_per_minute: int | None = Field(
        default=None, ge=1, description="Requests started per minute, per identity."
    )
    read_only: bool = Field(default=False, description="Only tools whose effective readOnlyHint is true.")

    @model_validator(mode="after")
    def _matches_someone(self) -> PolicyRule:
        if not self.subjects and not self.groups:
            raise ValueError("a policy rule needs 'subjects' and/or 'groups' (use subjects: ['*'] for everyone)")
        return self

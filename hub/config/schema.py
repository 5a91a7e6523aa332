"""The `servers.yaml` schema (each key's meaning, default and bounds): the document, each child server, `secrets:`
and `state:`; and `LoadedConfig`, the document with what is derived from its place on disk. `hub:` is in
`hub.config.settings`, `auth:` and `policies:` in `hub.config.access`.
"""

from __future__ import annotations

import fnmatch
import glob
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, field_validator, model_validator

from hub.access.policy import Limits, Policy, Rule
from hub.access.secrets import Secrets
from hub.config.access import AuthConfig, PolicyRule
from hub.config.lock import Lock
from hub.config.model import ExposureMode, OutputMode, Strict
from hub.config.overrides import ToolOverride
from hub.config.sandbox import SandboxConfig
from hub.config.settings import HubSettings
from hub.platform.sandbox import Grants

# A prefix: a letter, then letters, digits or '-'. No '_' or '+': they separate the prefix from names and URIs.
PREFIX_PATTERN = r"[a-z][a-z0-9-]{0,31}"

# Unset for a URL: SSE when it ends in /sse, else Streamable HTTP.
TransportKind = Literal["stdio", "streamable-http", "sse"]
# The protocol era the hub speaks to a child; "legacy" (handshake era) carries the child's own requests and
# notifications that a hub forwards (docs/protocols.md).
ChildProtocol = Literal["legacy", "auto", "2026-07-28"]
# How host sessions share a child (docs/protocols.md): one connection for all; one per handshake-era host session;
# one (one process) per identity, started with its own credentials (`${identity.name}`, `${secret:NAME}`).
SessionMode = Literal["shared", "per-host", "per-identity"]
# A tool that no longer matches its pin in servers.lock: held back until `hub pin --approve`, listed with a warning,
# or not checked.
OnChange = Literal["quarantine", "warn", "off"]
# Envoy's circuit-breaker defaults per upstream: a shared hub must not throttle a child that can take the load.
DEFAULT_MAX_CONCURRENCY = 1024
DEFAULT_MAX_QUEUE = 1024
DEFAULT_REQUEST_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 60.0


class ToolFilter(Strict):
    """Least privilege by omission: a tool reaches the host only if `allow` matches and `deny` does not."""

    allow: tuple[str, ...] = Field(default=("*",), description="Glob patterns of the child's tool names to expose.")
    deny: tuple[str, ...] = Field(default=(), description="Glob patterns of tool names never exposed; wins over allow.")

    def allows(self, name: str) -> bool:
        """Whether the child's tool `name` reaches the host."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.allow) and not any(
            fnmatch.fnmatchcase(name, p) for p in self.deny
        )


# The keys of a server that only decide what the host sees of it and how calls are checked, read on every rebuild
# of the namespace and every call; changing them needs no restart of the child.
EXPOSURE_KEYS = frozenset(
    {
        "tools",
        "overrides",
        "read_only",
        "confirm",
        "on_change",
        "output",
        "redact_output",
        "log_arguments",
        "secrets",
        "exposure",
        "always_visible",
    }
)


class OAuthSettings(Strict):
    """How the hub signs in to a URL child that is an OAuth-protected resource (hub.upstream.oauth): the child's
    authorization server is discovered from it (RFC 9728), each identity signs in once in a browser, and its tokens
    are kept encrypted (`state:`) and refreshed by the hub."""

    grant: Literal["authorization_code", "client_credentials"] = Field(
        default="authorization_code",
        description="Each identity signs in in a browser; or, client_credentials, the hub itself for all of them.",
    )
    scope: str | None = Field(default=None, description="Space-separated; unset: what the child's metadata names.")
    issuer: str | None = Field(
        default=None, description="With client_credentials: the issuer of the client, the only one asked for tokens."
    )
    client_id: str | None = Field(default=None, description="A registered client; unset: dynamic registration.")
    client_secret: str | None = Field(default=None, description="That client's secret; unset: a public client.")
    client_name: str = Field(default="hub", description="The name the hub registers under (dynamic registration).")

    @model_validator(mode="after")
    def _secret_needs_id(self) -> OAuthSettings:
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs client_id (a registered client)")
        if self.grant == "client_credentials" and None in (self.client_id, self.client_secret, self.issuer):
            raise ValueError("grant client_credentials needs client_id, client_secret and issuer")
        return self


class ServerConfig(Strict):
    """One child: a stdio command or a URL."""

    command: str | None = Field(default=None, description="Executable of a stdio child, looked up on PATH.")
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for a stdio child.")
    inherit_env: tuple[str, ...] = Field(default=(), description="Further hub environment variables it is given.")
    cwd: str | None = None
    url: str | None = Field(default=None, description="URL of a Streamable HTTP or SSE child.")
    transport: TransportKind | None = None
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to a URL child.")
    oauth: OAuthSettings | None = Field(default=None, description="Each identity signs in to it (hub auth login).")
    prefix: str | None = Field(default=None, description="Namespace prefix; defaults to the server's key; '' = none.")
    enabled: bool = True
    tools: ToolFilter = ToolFilter()
    protocol: ChildProtocol = "legacy"
    sessions: SessionMode = Field(default="shared", description="'per-host': one connection per host session.")
    max_sessions: int = Field(default=16, ge=1, description="With sessions: per-host, most connections open at once.")
    timeout: float = Field(default=DEFAULT_REQUEST_TIMEOUT, gt=0, description="Seconds a request may take.")
    tool_timeouts: dict[str, PositiveFloat] = Field(default_factory=dict, description="Tool-name glob -> seconds.")
    max_timeout: float = Field(default=600.0, gt=0, description="Ceiling in seconds when progress extends a deadline.")
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, description="Requests in flight at once.")
    max_queue: int = Field(default=DEFAULT_MAX_QUEUE, ge=0, description="Waiting beyond max_concurrency; more refused.")
    max_result_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="Larger results are refused.")
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0, description="Seconds to connect and list.")
    max_restarts: int = Field(default=5, ge=0, description="Restarts in a row before the child is left failed.")
    log_arguments: bool | None = Field(default=None, description="Overrides hub.log_arguments for this child.")
    required: bool = Field(default=False, description="/readyz waits for it; when no child is required, for all.")
    output: OutputMode | None = Field(default=None, description="'wrap': text results marked as untrusted data.")
    read_only: bool = Field(default=False, description="Only the tools whose effective readOnlyHint is true.")
    overrides: dict[str, ToolOverride] = Field(default_factory=dict, description="Child tool name (glob) -> override.")
    confirm: Literal["destructive"] | tuple[str, ...] = Field(
        default=(), description="Tools a user confirms before a call: own-name globs, or 'destructive' (by hint)."
    )
    on_change: OnChange = Field(default="quarantine", description="A tool that differs from its pin is held back.")
    redact_output: bool = Field(default=False, description="Redact secrets and credential shapes from results.")
    secrets: tuple[str, ...] = Field(default=(), description="Values never written to a log line (${DB_PASSWORD}).")
    exposure: ExposureMode | None = Field(default=None, description="'search', 'hybrid': found via hub_search_tools.")
    always_visible: tuple[str, ...] = Field(default=(), description="With hybrid: globs of own tool names listed.")
    sandbox: SandboxConfig | None = Field(default=None, description="A stdio child's sandbox; unset: hub.sandbox.")

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value not in (None, "") and not re.fullmatch(PREFIX_PATTERN, value):
            raise ValueError(
                f"prefix {value!r} is not valid: use 1-32 lowercase letters, digits or '-', starting with a letter "
                "(no '_' or '+': they separate the prefix from names and URIs), or '' for no prefix"
            )
        return value

    @field_validator("overrides")
    @classmethod
    def _check_overrides(cls, value: dict[str, ToolOverride]) -> dict[str, ToolOverride]:
        for key, override in value.items():
            if override.name is not None and glob.has_magic(key):
                raise ValueError(f"overrides.{key}: 'name' needs a key naming one tool, not a glob")
        return value

    @model_validator(mode="after")
    def _check_kind(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a stdio child) or 'url' (an HTTP or SSE child)")
        if self.url is not None:
            stdio_only = [k for k in ("args", "env", "inherit_env", "cwd", "sandbox") if k in self.model_fields_set]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)} only apply to stdio children (with 'command'), not 'url'")
            if not re.match(r"https?://", self.url):
                raise ValueError("url must start with http:// or https://")
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs 'command', not 'url'")
            self._check_oauth()
        else:
            if "headers" in self.model_fields_set:
                raise ValueError("headers only apply to URL children")
            if self.oauth is not None:
                raise ValueError("oauth only applies to URL children")
            if self.transport not in (None, "stdio"):
                raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
        return self

    def _check_oauth(self) -> None:
        if self.oauth is not None and self.kind == "sse":
            raise ValueError("oauth needs a Streamable HTTP child; the hub does not sign in to SSE children")
        if self.oauth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError("oauth sets the Authorization header itself: remove it from headers")
        if self.oauth is not None and self.oauth.grant == "client_credentials" and self.sessions == "per-identity":
            raise ValueError(
                "oauth grant client_credentials signs in as the hub, the same for every identity: use sessions: "
                "shared (or per-host), not per-identity"
            )

    def grants(self) -> Grants | None:
        """The sandbox this stdio child runs in (hub.platform.sandbox); None: none. Set from hub.sandbox when the
        server sets none (HubConfig)."""
        box = self.sandbox
        if box is None or box.mode == "none":
            return None
        return Grants(box.network, box.write, box.read, box.container, box.runtime)

    def launch_settings(self) -> dict[str, object]:
        """What a running child depends on: everything but the keys that only shape what the host sees of it (a
        reload that changes only those keeps the child running)."""
        return self.model_dump(exclude=set(EXPOSURE_KEYS))

    def timeout_for(self, tool: str | None) -> float:
        """The deadline of one request: the first matching `tool_timeouts` glob, else `timeout`."""
        if tool is not None:
            for pattern, seconds in self.tool_timeouts.items():
                if fnmatch.fnmatchcase(tool, pattern):
                    return seconds
        return self.timeout

    @property
    def kind(self) -> TransportKind:
        if self.command is not None:
            return "stdio"
        if self.transport is not None:
            return self.transport
        assert self.url is not None
        return "sse" if self.url.rstrip("/").endswith("/sse") else "streamable-http"


class SecretsConfig(Strict):
    """Where `${secret:NAME}` finds values: a directory of files named after secrets, a YAML file, or the
    environment (looked in that order)."""

    dir: str | None = Field(default=None, description="A directory with one file per secret (relative: to this file).")
    file: str | None = Field(default=None, description="A YAML mapping of secret names to values.")


class StateConfig(Strict):
    """Where replicas keep what a decision on one must mean on all (hub.state): confirmation rounds' key and
    used nonces. Read at start; a reload does not change it."""

    backend: Literal["memory", "redis"] = Field(default="memory", description="'redis': shared by replicas.")
    url: str | None = Field(default=None, description="With redis: redis://[user:password@]host:port/db.")
    key: str | None = Field(
        default=None,
        min_length=16,
        description="A secret shared by the replicas that seals rounds; unset with redis: one "
        "random key kept in Redis.",
    )
    oauth_dir: str | None = Field(
        default=None,
        description="With memory: where OAuth tokens are kept, encrypted (relative: to servers.yaml); "
        "unset: the user's state directory. With redis: in Redis, encrypted.",
    )

    @model_validator(mode="after")
    def _url_for_redis(self) -> StateConfig:
        if self.backend == "redis" and not (self.url or "").startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("backend 'redis' needs 'url': redis://host:port (or rediss://, unix://)")
        return self


class HubConfig(Strict):
    include: tuple[str, ...] = Field(
        default=(), description="Files merged under this one (relative to it, globs allowed): hub.config.include."
    )
    hub: HubSettings = HubSettings()
    auth: AuthConfig | None = None
    secrets: SecretsConfig = SecretsConfig()
    state: StateConfig = StateConfig()
    policies: tuple[PolicyRule, ...] = ()
    default_policy: Literal["allow", "deny"] | None = Field(
        default=None, description="For names no matching rule mentions; unset: 'deny' with policies, else 'allow'."
    )
    servers: dict[str, ServerConfig]

    @model_validator(mode="after")
    def _default_sandbox(self) -> HubConfig:
        """A stdio child without a sandbox of its own gets the hub's (and a reload that changes it restarts it)."""
        for name, server in self.servers.items():
            if server.command is not None and server.sandbox is None:
                self.servers[name] = server.model_copy(update={"sandbox": self.hub.sandbox})
        return self

    @model_validator(mode="after")
    def _unique_rules(self) -> HubConfig:
        names = [r.name for r in self.policies]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"policy rule names must be unique; given more than once: {', '.join(twice)}")
        return self


@dataclass(frozen=True)
class LoadedConfig:
    path: Path
    config: HubConfig
    lock: Lock | None = None  # servers.lock beside the file (`hub pin`), None when there is none
    files: tuple[Path, ...] = ()  # every file read: this one and what it includes (the reload watcher's list)
    globs: tuple[str, ...] = ()  # the include globs: a file that newly matches one is a change too
    # Each server's file, and the keys a later file replaced (with that file): `hub check`, `hub list --json`.
    origins: dict[str, tuple[Path, dict[str, Path]]] = field(default_factory=dict)

    @cached_property
    def policy(self) -> Policy:
        """The policy per identity of this configuration (`hub.access.policy`)."""
        config, limits = self.config, self.config.hub.per_identity
        rules = tuple(
            Rule(**{**r.model_dump(), "subjects": frozenset(r.subjects), "groups": frozenset(r.groups)})
            for r in config.policies
        )
        default = config.default_policy or ("deny" if rules else "allow")
        return Policy(rules, default, Limits(limits.max_concurrency, limits.requests_per_minute))

    # The paths servers.yaml names; relative ones are taken from its directory.

    @cached_property
    def token_path(self) -> Path | None:
        auth = self.config.auth
        return None if auth is None else self._place(auth.tokens)

    @cached_property
    def log_path(self) -> Path | None:
        """The log file servers.yaml names; None when it names none (`false` or unset)."""
        log_file = self.config.hub.log_file
        return self._place(log_file) if isinstance(log_file, str) else None

    @cached_property
    def secrets(self) -> Secrets:
        """Where `${secret:NAME}` is looked up."""
        return Secrets(self._place(self.config.secrets.dir), self._place(self.config.secrets.file))

    def _place(self, path: str | None) -> Path | None:
        return None if path is None else self.path.parent / Path(path).expanduser()

    def prefix_of(self, name: str) -> str:
        server = self.config.servers[name]
        return name if server.prefix is None else server.prefix

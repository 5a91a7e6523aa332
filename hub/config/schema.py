"""The `servers.yaml` schema: what each key means, its default and its bounds.

Frozen pydantic models with `extra="forbid"`, so a misspelt key is an error that hub/config/loader.py turns into a
message naming the file, the line and the closest allowed key.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, field_validator, model_validator

# A prefix: a letter, then letters, digits or '-'. No '_' or '+': they separate the prefix from names and URIs.
PREFIX_PATTERN = r"[a-z][a-z0-9-]{0,31}"

# A child is a stdio process or a URL; "auto" picks SSE for URLs ending in /sse, Streamable HTTP otherwise.
TransportKind = Literal["stdio", "streamable-http", "sse"]
# Which protocol era the hub speaks to a child. "legacy" (handshake era) is the default because it carries
# server->client requests and unsolicited notifications that a hub forwards (see docs/protocols.md).
ChildProtocol = Literal["legacy", "auto", "2026-07-28"]
# How host sessions share a child (docs/protocols.md, "Which host request a child's request belongs to"):
# "shared" = one connection for all; "per-host" = each handshake-era host session gets its own connection.
SessionMode = Literal["shared", "per-host"]
DEFAULT_MAX_SESSIONS = 16

# Per-child limits. The concurrency defaults are Envoy's circuit-breaker defaults per upstream (1,024 requests,
# 1,024 pending): a shared hub must not throttle a child that can take the load; a child that cannot sets less.
DEFAULT_MAX_CONCURRENCY = 1024
DEFAULT_MAX_QUEUE = 1024
DEFAULT_REQUEST_TIMEOUT = 120.0
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_CONNECT_TIMEOUT = 60.0
DEFAULT_MAX_TIMEOUT = 600.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolFilter(_Strict):
    """Least privilege by omission: a tool reaches the host only if `allow` matches and `deny` does not."""

    allow: tuple[str, ...] = Field(default=("*",), description="Glob patterns of the child's tool names to expose.")
    deny: tuple[str, ...] = Field(default=(), description="Glob patterns of tool names never exposed; wins over allow.")

    def allows(self, name: str) -> bool:
        """Whether the child's tool `name` reaches the host."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.allow) and not any(
            fnmatch.fnmatchcase(name, p) for p in self.deny
        )


class ServerConfig(_Strict):
    """One child: a stdio command or a URL."""

    command: str | None = Field(default=None, description="Executable of a stdio child, looked up on PATH.")
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for a stdio child.")
    inherit_env: tuple[str, ...] = Field(
        default=(), description="Names of further hub environment variables passed to a stdio child."
    )
    cwd: str | None = None
    url: str | None = Field(default=None, description="URL of a Streamable HTTP or SSE child.")
    transport: TransportKind | None = None
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to a URL child.")
    prefix: str | None = Field(default=None, description="Namespace prefix; defaults to the server's key; '' = none.")
    enabled: bool = True
    tools: ToolFilter = ToolFilter()
    protocol: ChildProtocol = "legacy"
    sessions: SessionMode = Field(
        default="shared", description="'per-host': one connection to this child per host session (exact routing)."
    )
    max_sessions: int = Field(
        default=DEFAULT_MAX_SESSIONS, ge=1, description="With sessions: per-host, most connections open at once."
    )
    timeout: float = Field(default=DEFAULT_REQUEST_TIMEOUT, gt=0, description="Seconds a request may take.")
    tool_timeouts: dict[str, PositiveFloat] = Field(
        default_factory=dict, description="Tool-name glob -> seconds; overrides `timeout` for matching tools."
    )
    max_timeout: float = Field(
        default=DEFAULT_MAX_TIMEOUT, gt=0, description="Ceiling in seconds when progress keeps extending a deadline."
    )
    max_concurrency: int = Field(
        default=DEFAULT_MAX_CONCURRENCY,
        ge=1,
        description="Requests in flight to this child at once, on all its connections.",
    )
    max_queue: int = Field(
        default=DEFAULT_MAX_QUEUE, ge=0, description="Requests waiting beyond max_concurrency; more are refused."
    )
    max_result_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="Larger results are refused.")
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0, description="Seconds to connect and list.")
    max_restarts: int = Field(default=5, ge=0, description="Restarts in a row before the child is left failed.")
    log_arguments: bool | None = Field(default=None, description="Overrides hub.log_arguments for this child.")

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value not in (None, "") and not re.fullmatch(PREFIX_PATTERN, value):
            raise ValueError(
                f"prefix {value!r} is not valid: use 1-32 lowercase letters, digits or '-', starting with a letter "
                "(no '_' or '+': they separate the prefix from names and URIs), or '' for no prefix"
            )
        return value

    @model_validator(mode="after")
    def _check_kind(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a stdio child) or 'url' (an HTTP or SSE child)")
        if self.url is not None:
            stdio_only = [k for k in ("args", "env", "inherit_env", "cwd") if k in self.model_fields_set]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)} only apply to stdio children (with 'command'), not 'url'")
            if not re.match(r"https?://", self.url):
                raise ValueError("url must start with http:// or https://")
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs 'command', not 'url'")
        else:
            if "headers" in self.model_fields_set:
                raise ValueError("headers only apply to URL children")
            if self.transport not in (None, "stdio"):
                raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
        return self

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


class HttpSettings(_Strict):
    """Bounds of the Streamable HTTP front (`hub serve --http`): a flood of sessions cannot lock real clients out."""

    max_sessions: int = Field(default=1000, ge=1, description="Handshake-era sessions open at once, in all.")
    max_sessions_per_client: int = Field(default=100, ge=1, description="Sessions open at once from one address.")
    session_idle_timeout: float = Field(
        default=1800.0, gt=0, description="Seconds without a request before a session closes."
    )
    unused_session_timeout: float = Field(
        default=60.0, gt=0, description="Seconds a session may stay without any request after initialize."
    )
    request_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a client may take to send a request's head (line, headers), and its body.",
    )


class HubSettings(_Strict):
    """Settings of the hub itself."""

    http: HttpSettings = HttpSettings()

    log_arguments: bool = Field(default=False, description="Put tool argument values in the call log.")
    health_tool: bool = Field(default=True, description="Expose the built-in hub_health tool.")
    watch: bool = Field(default=True, description="Reload servers.yaml when it changes on disk.")
    max_request_bytes: int = Field(
        default=DEFAULT_MAX_REQUEST_BYTES,
        ge=1024,
        description="The largest message a host may send; a larger one is refused with an error naming this limit.",
    )
    startup_listing_wait: float = Field(
        default=5.0,
        ge=0,
        description=(
            "Seconds after the hub's process starts during which a list request waits for the servers still "
            "starting, so that a host's first listing is complete; 0 answers at once with the servers already up."
        ),
    )


class HubConfig(_Strict):
    hub: HubSettings = HubSettings()
    servers: dict[str, ServerConfig]


@dataclass(frozen=True)
class LoadedConfig:
    path: Path
    config: HubConfig

    def prefix_of(self, name: str) -> str:
        server = self.config.servers[name]
        return name if server.prefix is None else server.prefix

"""The `hub:` section of servers.yaml: the hub's own settings, each key with its meaning, default and bounds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hub.config.model import ExposureMode, OutputMode, Strict
from hub.config.sandbox import NO_SANDBOX, SandboxConfig

# 64 (what hosts and LLM APIs allow) minus `mcp__hub__`, the longest prefix a host puts before a server's tools
# (Claude Code), for a hub entry named `hub`.
DEFAULT_NAME_BUDGET = 64 - len("mcp__hub__")

DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024


class HttpSettings(Strict):
    """Bounds of the Streamable HTTP front (`hub serve --http`): a flood of sessions cannot lock real clients out."""

    max_sessions: int = Field(default=1000, ge=1, description="Handshake-era sessions open at once, in all.")
    max_sessions_per_client: int = Field(default=100, ge=1, description="Sessions open at once from one address.")
    session_idle_timeout: float = Field(default=1800.0, gt=0, description="Seconds without a request, then closed.")
    unused_session_timeout: float = Field(default=60.0, gt=0, description="Seconds with no request after initialize.")
    request_timeout: float = Field(default=30.0, gt=0, description="Seconds to send a request's head, and its body.")
    public_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^/?#]+$",
        description="The hub's origin as browsers reach it (behind a proxy: https://hub.example.com), for the "
        "sign-in links of OAuth children; unset: http:// and the --http address.",
    )


class IdentityLimits(Strict):
    """What each identity may ask of a shared hub, unless a policy rule that matches it sets less."""

    max_concurrency: int | None = Field(default=None, ge=1, description="Requests in flight at once; unset: no limit.")
    requests_per_minute: int | None = Field(default=None, ge=1, description="Requests per minute; unset: no limit.")


class LogRotation(Strict):
    """Rotation by size of the hub's log file (hub.logfile): hub.log becomes hub.log.1, and so on."""

    max_bytes: int = Field(
        default=10 * 1024 * 1024, ge=0, description="Rotate before a line passes it; 0: never (logrotate, SIGHUP)."
    )
    backups: int = Field(default=5, ge=1, le=1000, description="Rotated files kept (hub.log.1 ... hub.log.N).")


class HubSettings(Strict):
    http: HttpSettings = HttpSettings()
    per_identity: IdentityLimits = IdentityLimits()

    log_arguments: bool = Field(default=False, description="Put tool argument values in the call log.")
    health_tool: bool = Field(default=True, description="Expose the built-in hub_health tool.")
    watch: bool = Field(default=True, description="Reload servers.yaml when it changes on disk.")
    max_request_bytes: int = Field(
        default=DEFAULT_MAX_REQUEST_BYTES, ge=1024, description="The largest message a host may send."
    )
    output: OutputMode = Field(default="none", description="'wrap': every child's text results as untrusted data.")
    exposure: ExposureMode = Field(
        default="full",
        description="'full': every tool listed; 'search': hosts find tools with hub_search_tools and call them with "
        "hub_call_tool; 'hybrid': search plus always_visible. A server's own `exposure` overrides it.",
    )
    always_visible: tuple[str, ...] = Field(default=(), description="With hybrid: globs of exposed names listed.")
    name_budget: int = Field(
        default=DEFAULT_NAME_BUDGET, ge=16, le=64, description="Longest exposed tool name, so that mcp__hub__ fits."
    )
    always_prefix: bool = Field(
        default=False,
        description="Prefix even a name that starts with the prefix (git_git_status); by default it stays git_status.",
    )
    drain_timeout: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, seconds the calls in flight may take before the children stop; on stdio, also "
        "how long the requests already read may take once the host closes stdin.",
    )
    startup_listing_wait: float = Field(
        default=5.0,
        ge=0,
        description="Seconds after start during which a list request waits for the servers still starting, so "
        "that a host's first listing is complete; 0: answer at once.",
    )
    log_file: str | Literal[False] | None = Field(
        default=None,
        description="Where `hub serve` appends its logs without --log-file (relative: to servers.yaml), and `hub "
        "logs` reads. Unset: on stdio also hub.config.paths.default_log_path; false: stderr only.",
    )
    log_rotate: LogRotation = LogRotation()
    sandbox: SandboxConfig = Field(
        default=NO_SANDBOX, description="The sandbox of every stdio child that sets none of its own (docs/sandbox.md)."
    )

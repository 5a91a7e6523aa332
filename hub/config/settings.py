"""The `hub:` section of servers.yaml: the hub's own settings (the HTTP front's bounds, per-identity limits, the log
file and its rotation, listing and exposure defaults), each key with its meaning, default and bounds."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hub.config.model import ExposureMode, OutputMode, Strict
from hub.config.sandbox import NO_SANDBOX, SandboxConfig

# Longest exposed tool name by default: 64 (what hosts and LLM APIs allow) minus `mcp__hub__`, the longest prefix a
# host puts before a server's tools (Claude Code), for a hub entry named `hub`.
DEFAULT_NAME_BUDGET = 64 - len("mcp__hub__")

DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024


class HttpSettings(Strict):
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
        default=10 * 1024 * 1024,
        ge=0,
        description="Rotate before a line would take the file past this size; 0: never (logrotate, then SIGHUP).",
    )
    backups: int = Field(default=5, ge=1, le=1000, description="Rotated files kept (hub.log.1 ... hub.log.N).")


class HubSettings(Strict):
    """Settings of the hub itself."""

    http: HttpSettings = HttpSettings()
    per_identity: IdentityLimits = IdentityLimits()

    log_arguments: bool = Field(default=False, description="Put tool argument values in the call log.")
    health_tool: bool = Field(default=True, description="Expose the built-in hub_health tool.")
    watch: bool = Field(default=True, description="Reload servers.yaml when it changes on disk.")
    max_request_bytes: int = Field(
        default=DEFAULT_MAX_REQUEST_BYTES,
        ge=1024,
        description="The largest message a host may send; a larger one is refused with an error naming this limit.",
    )
    output: OutputMode = Field(
        default="none", description="'wrap': every child's text results inside an untrusted-data boundary."
    )
    exposure: ExposureMode = Field(
        default="full",
        description="'full': every tool listed; 'search': hosts find tools with hub_search_tools and call them with "
        "hub_call_tool; 'hybrid': search plus always_visible. A server's own `exposure` overrides it.",
    )
    always_visible: tuple[str, ...] = Field(
        default=(), description="With hybrid exposure, globs of exposed tool names listed anyway."
    )
    name_budget: int = Field(
        default=DEFAULT_NAME_BUDGET,
        ge=16,
        le=64,
        description="Longest exposed tool name, so that a host's own prefix (mcp__hub__) keeps it within 64.",
    )
    always_prefix: bool = Field(
        default=False,
        description="Put the prefix before every tool and prompt name, even one that starts with it already "
        "(git_git_status); by default such a name is exposed as it is (git_status).",
    )
    drain_timeout: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, seconds the calls in flight may take to finish before the children are stopped; "
        "on stdio, also how long the requests already read may take to be answered once the host closes stdin.",
    )
    startup_listing_wait: float = Field(
        default=5.0,
        ge=0,
        description=(
            "Seconds after the hub's process starts during which a list request waits for the servers still "
            "starting, so that a host's first listing is complete; 0 answers at once with the servers already up."
        ),
    )
    log_file: str | Literal[False] | None = Field(
        default=None,
        description="Where `hub serve` appends its logs when --log-file is not given (relative: to servers.yaml); "
        "what `hub logs` reads by default. Unset: `hub serve` on stdio also appends them to hub.log in the user's "
        "log directory (hub.config.paths.default_log_path); false: stderr only.",
    )
    log_rotate: LogRotation = LogRotation()
    sandbox: SandboxConfig = Field(
        default=NO_SANDBOX,
        description="The sandbox of every stdio child that sets none of its own: 'strict', 'none', or "
        "{network, write, read, container} (docs/sandbox.md).",
    )

"""The protocol revisions: which exist, what the hub says about itself in each, and how a result is shaped for one.

The handshake era (2024-11-05 ... 2025-11-25): `initialize`, then requests on a session that remembers the client's
capabilities, and the server may send requests and notifications of its own. The 2026-07-28 era: no handshake; every
request carries its envelope in `params._meta`, results carry `resultType` and the server's identity, and the server
sends nothing on its own except on a `subscriptions/listen` stream. Model types per revision come from `mcp_types`,
imported on first use (`load_models`), so that a host's `initialize` is answered before they are loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub import __version__
from hub.protocol.jsonrpc import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
LATEST_MODERN = MODERN_VERSIONS[-1]

# Keys of the 2026-07-28 envelope (`params._meta`) and of the result stamp.
META_PREFIX = "io.modelcontextprotocol/"
PROTOCOL_VERSION_KEY = META_PREFIX + "protocolVersion"
CLIENT_INFO_KEY = META_PREFIX + "clientInfo"
CLIENT_CAPABILITIES_KEY = META_PREFIX + "clientCapabilities"
LOG_LEVEL_KEY = META_PREFIX + "logLevel"
SERVER_INFO_KEY = META_PREFIX + "serverInfo"
SUBSCRIPTION_ID_KEY = META_PREFIX + "subscriptionId"

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Who the hub is to hosts, and to children.
SERVER_INFO: dict[str, Any] = {
    "name": "mcp-hub",
    "title": "MCP hub",
    "version": __version__,
    "description": "Aggregates many MCP servers behind one entry.",
}
CLIENT_INFO: dict[str, Any] = {"name": "mcp-hub", "version": __version__}
# Every list may change (a child's does, or the config), and the hub routes everything a child can serve.
SERVER_CAPABILITIES: dict[str, Any] = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
# What the hub can relay from a child to a host. Toward a 2026-07-28 child the same, as input-required rounds.
CLIENT_CAPABILITIES: dict[str, Any] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}
# Methods whose 2026-07-28 results say how long they may be cached: the hub's change whenever a child's do.
CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})


def is_modern(version: str | None) -> bool:
    return version in MODERN_VERSIONS


def initialize_result(requested: Any, instructions: str | None = None) -> dict[str, Any]:
    """The answer to `initialize`: in the host's handshake version, if the hub speaks it."""
    result: dict[str, Any] = {
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
        "capabilities": SERVER_CAPABILITIES,
        "serverInfo": SERVER_INFO,
    }
    if instructions:
        result["instructions"] = instructions
    return result


def discover_result(instructions: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": SERVER_CAPABILITIES,
        "ttlMs": 0,
        "cacheScope": "private",
    }
    if instructions:
        result["instructions"] = instructions
    return result


@dataclass(frozen=True, slots=True)
class Envelope:
    """What a 2026-07-28 request says about its client, from `params._meta`."""

    version: str
    capabilities: dict[str, Any]
    client_info: Any
    log_level: str | None


class EnvelopeError(Exception):
    """A request's 2026-07-28 envelope is missing or wrong; `code` and `data` are the JSON-RPC error's."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def has_envelope(params: Mapping[str, Any]) -> bool:
    """Whether a request claims the 2026-07-28 era (its `_meta` names a protocol version)."""
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_KEY in meta


def read_envelope(params: Mapping[str, Any]) -> Envelope:
    """The envelope of a 2026-07-28 request; EnvelopeError if a required key is missing or malformed (-32602), or
    the version is not served (-32022)."""
    meta = params.get("_meta")
    if type(meta) is not dict:
        raise EnvelopeError(INVALID_PARAMS, f"params._meta must be an object carrying {PROTOCOL_VERSION_KEY!r}")
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise EnvelopeError(INVALID_PARAMS, f"params._meta is missing the envelope key(s): {', '.join(missing)}")
    version, capabilities = meta[PROTOCOL_VERSION_KEY], meta[CLIENT_CAPABILITIES_KEY]
    if type(version) is not str:
        raise EnvelopeError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        data = {"supported": list(MODERN_VERSIONS), "requested": version}
        raise EnvelopeError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
    if type(capabilities) is not dict:
        raise EnvelopeError(INVALID_PARAMS, "the client-capabilities envelope value must be an object")
    level = meta.get(LOG_LEVEL_KEY)
    return Envelope(version, capabilities, meta.get(CLIENT_INFO_KEY), level if level in LOG_LEVELS else None)


def envelope_meta(log_level: str | None, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The envelope the hub puts on its requests to a 2026-07-28 child (`capabilities`: its connection's)."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_KEY: LATEST_MODERN,
        CLIENT_INFO_KEY: CLIENT_INFO,
        CLIENT_CAPABILITIES_KEY: CLIENT_CAPABILITIES if capabilities is None else capabilities,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def child_meta(host_meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The host's `_meta` as a child gets it: vendor keys kept; the progress token (the child gets the hub's own)
    and the protocol keys (they describe the host's connection, not the hub's to the child) dropped."""
    if not host_meta:
        return {}
    return {k: v for k, v in host_meta.items() if k != "progressToken" and not k.startswith(META_PREFIX)}


# ---- results ------------------------------------------------------------------------------------------------------


def stamp(result: dict[str, Any], method: str) -> dict[str, Any]:
    """A result as a 2026-07-28 host must get it: `resultType`, the hub's identity (replacing a child's; its other
    `_meta` keys kept), and cache hints."""
    shaped = dict(result)
    shaped.setdefault("resultType", "complete")
    if method in CACHEABLE and shaped["resultType"] == "complete":
        shaped.setdefault("ttlMs", 0)
        shaped.setdefault("cacheScope", "private")
    meta = shaped.get("_meta")
    shaped["_meta"] = {**(meta if type(meta) is dict else {}), SERVER_INFO_KEY: SERVER_INFO}
    return shaped


def unstamp(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 child's result as a handshake-era host gets it: no era fields, no child stamp."""
    shaped = {k: v for k, v in result.items() if k not in ("resultType", "ttlMs", "cacheScope")}
    meta = shaped.get("_meta")
    if type(meta) is dict and SERVER_INFO_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_KEY}
        if rest:
            shaped["_meta"] = rest
        else:
            del shaped["_meta"]
    return shaped


def load_models() -> None:
    """Import the per-revision models (most of the hub's start-up CPU), in a worker thread as the children start."""
    from mcp_types import methods  # noqa: F401


def sieve_items(method: str, key: str, version: str, items: tuple[dict[str, Any], ...]) -> tuple[list[Any], list[str]]:
    """Each listed item as `version` defines it (fields it does not know dropped), and the problems met: item by
    item, so that one child's malformed tool costs that tool only (left out and named)."""
    from mcp_types import methods
    from pydantic import ValidationError

    shaped: list[Any] = []
    problems: list[str] = []
    envelope = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"} if is_modern(version) else {}
    for item in items:
        try:
            sieved = methods.serialize_server_result(method, version, {key: [item], **envelope})[key]
            shaped.extend(_keep_execution(item, sieved) if envelope and "execution" in item else sieved)
        except (ValidationError, KeyError, ValueError, RecursionError) as exc:
            problems.append(f"{item.get('name') or item.get('uri') or item.get('uriTemplate')!r}: {_first(exc)}")
    return shaped, problems


def _keep_execution(item: dict[str, Any], sieved: list[Any]) -> list[Any]:
    """A tool's `execution` (its `taskSupport`) kept for a 2026-07-28 host: the core schema of that revision has
    moved tasks to an extension and no longer names the field, but a host learns from it which tools need a task,
    as a 2025-11-25 host does."""
    execution = item["execution"]
    if type(execution) is not dict or len(sieved) != 1 or type(sieved[0]) is not dict:
        return sieved
    return [{**sieved[0], "execution": execution}]


def _first(exc: Exception) -> str:
    text = str(exc).splitlines()
    return " ".join(text[:3])[:300] if text else type(exc).__name__

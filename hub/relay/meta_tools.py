"""The hub's tools for `exposure: search`: `hub_search_tools` finds tools, `hub_call_tool` calls one by name.

They are listed whenever some server's tools are left out of listings (`exposure: search` or `hybrid`, for a server
or the whole hub). `hub_call_tool` is not a second way in: the router turns it into the named tool's own
`tools/call` (`Forwarded`) and routes that exactly as if the host had sent it, so policy, read-only, fixed
arguments, constraints, confirmation, quarantine and the call log apply unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hub.config.schema import ServerConfig
from hub.config.settings import HubSettings
from hub.protocol import errors
from hub.protocol.jsonrpc import RequestId
from hub.relay.ports import HostRequest, HostSession
from hub.relay.search import DEFAULT_LIMIT, MAX_LIMIT

SEARCH_TOOL = "hub_search_tools"
CALL_TOOL = "hub_call_tool"
# Listed and usable whatever the policy says of their own names: what a search returns is filtered by the caller's
# policy, and the call hub_call_tool makes is decided as the named tool's own, so a policy that allows `icinga_*`
# finds and calls exactly `icinga_*` through them, and nothing else.
GATEWAY_TOOLS = frozenset({SEARCH_TOOL, CALL_TOOL})
SEARCH_TOOL_DEF: dict[str, Any] = {
    "name": SEARCH_TOOL,
    "title": "Search tools",
    "description": "Find the tools of the servers behind this hub by what they do: give a few words (a task, an "
    "object, a verb); the best matches come back with their full definitions. Call one with hub_call_tool.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        },
        "required": ["query"],
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
CALL_TOOL_DEF: dict[str, Any] = {
    "name": CALL_TOOL,
    "title": "Call a tool",
    "description": "Call a tool found with hub_search_tools, by its name, with arguments matching its inputSchema.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as hub_search_tools gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
        },
        "required": ["name"],
    },
}


def search_exposed(settings: HubSettings, servers: Iterable[ServerConfig]) -> bool:
    """Whether some server's tools are found by search rather than listed: then the two tools are the hub's."""
    return settings.exposure != "full" or any(s.exposure not in (None, "full") for s in servers if s.enabled)


def search_arguments(params: dict[str, Any]) -> tuple[str, int]:
    """The query and limit of a hub_search_tools call, checked."""
    arguments = params.get("arguments") or {}
    query = arguments.get("query") if isinstance(arguments, dict) else None
    if not isinstance(query, str) or not query.strip():
        raise errors.ArgumentRefused(f"tool {SEARCH_TOOL!r}: argument 'query' must be a non-empty string", "query")
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise errors.ArgumentRefused(
            f"tool {SEARCH_TOOL!r}: argument 'limit' must be an integer from 1 to {MAX_LIMIT}", "limit"
        )
    return query, limit


class Forwarded:
    """A host's `hub_call_tool` request as the named tool's own `tools/call`: the same request (id, session,
    stream, progress token, answer) with the inner name and arguments as its params."""

    def __init__(self, request: HostRequest) -> None:
        params = request.params
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise errors.BadRequest("invalid params: 'arguments' must be an object")
        name = arguments.get("name")
        if not isinstance(name, str) or name == CALL_TOOL:
            raise errors.ArgumentRefused(
                f"tool {CALL_TOOL!r}: argument 'name' must name a tool (as hub_search_tools gives it)", "name"
            )
        inner = arguments.get("arguments")
        if inner is not None and not isinstance(inner, dict):
            raise errors.ArgumentRefused(f"tool {CALL_TOOL!r}: argument 'arguments' must be an object", "arguments")
        # A 2026-07-28 host's next round of the call (requestState, inputResponses) travels as for any tool.
        kept = {k: v for k, v in params.items() if k not in ("name", "arguments")}
        self._request = request
        self._params: dict[str, Any] = {**kept, "name": name, "arguments": inner or {}}
        self.version = request.version

    @property
    def id(self) -> RequestId:
        return self._request.id

    @property
    def method(self) -> str:
        return self._request.method

    @property
    def params(self) -> dict[str, Any]:
        return self._params

    @property
    def session(self) -> HostSession:
        return self._request.session

    @property
    def progress_token(self) -> RequestId | None:
        return self._request.progress_token

    @property
    def log_level(self) -> str | None:
        return self._request.log_level

    def declared(self, capability: str) -> bool:
        return self._request.declared(capability)

    def respond(self, result: dict[str, Any] | bytes) -> None:
        self._request.respond(result)

    def fail(self, error: dict[str, Any]) -> None:
        self._request.fail(error)

    def drop(self) -> None:
        self._request.drop()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._request.notify(method, params)

    def log(self, params: dict[str, Any]) -> None:
        self._request.log(params)

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        return await self._request.ask(method, params, limit_s)

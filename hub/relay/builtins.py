"""The hub's own tools (`hub_health`, `hub_search_tools`, `hub_call_tool`) and its instructions. `hub_call_tool` is
not a second way in: the router turns it into the named tool's own `tools/call` (`Forwarded`), routed exactly as if
the host had sent it, so every rule of a call applies unchanged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hub.access.identity import Identity
from hub.access.policy import Policy, View
from hub.config.schema import ServerConfig
from hub.config.settings import HubSettings
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import encode
from hub.relay.catalog import CALL_TOOL, SEARCH_TOOL, Namespace
from hub.relay.ports import HostRequest, StandIn
from hub.relay.record import Record
from hub.relay.search import DEFAULT_LIMIT, MAX_LIMIT
from hub.upstream.child import Child

HEALTH_TOOL = "hub_health"
HEALTH_TOOL_DEF: dict[str, Any] = {
    "name": HEALTH_TOOL,
    "title": "Hub health",
    "description": "State of the MCP hub and of each server behind it: ready, restarting or failed, with counts "
    "and the last error. Call it when a tool of another server fails.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
# The most the hub's generated instructions take (characters): hosts put them in the model's context.
INSTRUCTIONS_LIMIT = 1500
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


class Forwarded(StandIn):
    """A host's `hub_call_tool` request as the named tool's own `tools/call` (`hub.relay.ports.HostRequest`): the
    same request (id, session, stream, progress token, answer) with the inner name and arguments as its params.
    The router has checked that the outer `arguments` is an object (or absent)."""

    def __init__(self, request: HostRequest) -> None:
        params = request.params
        arguments = params.get("arguments") or {}
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
        super().__init__(request)
        self.params = {**kept, "name": name, "arguments": inner or {}}


@dataclass(frozen=True)
class Builtins:
    """The hub's own tools as a host lists and calls them, and its instructions, made of what the hub holds now."""

    _settings: Callable[[], HubSettings]
    _servers: Callable[[], Iterable[ServerConfig]]
    _namespace: Callable[[], Namespace]
    _children: Callable[[], Mapping[str, Child]]
    _policy: Callable[[], Policy]
    _health: Callable[[], dict[str, Any]]
    _record: Record

    def tools(self) -> tuple[dict[str, Any], ...]:
        """The hub's own tools: hub_health unless turned off; the search tools when some tools are not listed."""
        settings = self._settings()
        health = (HEALTH_TOOL_DEF,) if settings.health_tool else ()
        if search_exposed(settings, self._servers()):
            return (*health, SEARCH_TOOL_DEF, CALL_TOOL_DEF)
        return health

    def reserved(self) -> frozenset[str]:
        """The names no child may take: the hub's own tools' now."""
        return frozenset(str(t["name"]) for t in self.tools())

    def instructions(self, view: View) -> str:
        """What the hub tells a host at initialize, so that the model knows what is behind the one entry: one line
        per server the caller's `view` may use, with the tools it may call, within INSTRUCTIONS_LIMIT. A child's own
        instructions are not passed on: unchecked, they would reach the model as the hub's."""
        namespace = self._namespace()
        searching = search_exposed(self._settings(), self._servers())
        owned: dict[str, list[str]] = {}
        for exposed, route in namespace.tool_routes.items():
            if view.open or view.allows(exposed, writes=namespace.writes(exposed)):
                owned.setdefault(route.child, []).append(exposed)
        shown = [c for c in self._children().values() if view.open or c.name in owned or _may_see(view, c)]
        lines = [f"This MCP hub serves the tools of {len(shown)} servers, each under its own prefix:"]
        per_line = max(80, (INSTRUCTIONS_LIMIT - 200) // max(1, len(shown)))
        for child in shown:
            tools = owned.get(child.name, [])
            own = f"{child.prefix}_" if child.prefix else ""  # said once, before the tools' names
            listed = ", ".join(t.removeprefix(own) for t in tools) if tools else str(child.state)
            line = f"- {own or '(no prefix)'} {child.name} ({len(tools)} tools: {listed})"
            lines.append(line if len(line) <= per_line else line[: per_line - 4] + "...)")
        if searching:
            lines.append("Some tools are not listed: find them with hub_search_tools and call them with hub_call_tool.")
        text = "\n".join(lines)
        return text if len(text) <= INSTRUCTIONS_LIMIT else text[: INSTRUCTIONS_LIMIT - 3] + "..."

    def health(self, request: HostRequest, rule: str | None) -> None:
        """hub_health: the report as the caller's policy shows it."""
        started = time.perf_counter()
        report = self.visible_health(request.session.identity)
        self._answer(request, HEALTH_TOOL, json.dumps(report, indent=2), report, started, rule)

    def search(self, request: HostRequest, rule: str | None) -> None:
        """hub_search_tools: the best matches among the tools the caller's policy shows, as full definitions;
        `errors.ArgumentRefused` when its arguments are not a query and a limit."""
        started = time.perf_counter()
        arguments = request.params.get("arguments") or {}  # an object: checked as the request was routed
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise errors.ArgumentRefused(f"tool {SEARCH_TOOL!r}: argument 'query' must be a non-empty string", "query")
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise errors.ArgumentRefused(
                f"tool {SEARCH_TOOL!r}: argument 'limit' must be an integer from 1 to {MAX_LIMIT}", "limit"
            )
        view = self._policy().view(request.session.identity)
        found = self._namespace().search(query, limit, view)
        report = {"tools": found}
        names = ", ".join(str(t.get("name")) for t in found) or "none"
        text = f"{len(found)} tools found: {names}\n{json.dumps(report)}"
        self._answer(request, SEARCH_TOOL, text, report, started, rule)

    def _answer(
        self, request: HostRequest, tool: str, text: str, report: dict[str, Any], started: float, rule: str | None
    ) -> None:
        """A built-in tool's result (`text`, and `report` as its structured content), answered and recorded."""
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "structuredContent": report}
        if revisions.is_modern(request.version):
            result = revisions.stamp(result, "tools/call")
        body = encode(result)
        request.respond(body)
        self._record.line(request, "hub", tool, None, started, "ok", size=len(body), rule=rule)

    def visible_health(self, identity: Identity) -> dict[str, Any]:
        """The health report as `identity` may see it: the servers and collisions of names its policy shows, and
        under a policy `caller` (who the hub takes it for, the rules that match it), so a host whose listing is short
        can say why; never what the policy hid, nor how many (`hub list` and the log tell the operator)."""
        report = self._health()
        view = self._policy().view(identity)
        if view.open:
            return report
        namespace = self._namespace()
        routes = (namespace.tool_routes, namespace.prompt_routes, namespace.resource_routes, namespace.template_routes)
        seen = {
            route.child
            for table in routes
            for name, route in table.items()
            if view.allows(name, writes=table is namespace.tool_routes and namespace.writes(name))
        }
        return {
            **report,
            "caller": {
                "identity": identity.name,
                "groups": sorted(identity.groups),
                "auth": identity.method,
                "matching_rules": [rule.name for rule in view.rules],
            },
            "servers": [s for s in report["servers"] if s["name"] in seen],
            "collisions": [
                c for c in report["collisions"] if view.allows(c["exposed"], writes=namespace.writes(c["exposed"]))
            ],
        }


def _may_see(view: View, child: Child) -> bool:
    """Whether a server without tools yet (starting) is named to a caller: when its policy allows names under the
    server's prefix, as it will allow some of its tools."""
    return not child.listing.tools and bool(child.prefix) and view.allows(f"{child.prefix}_", writes=False)

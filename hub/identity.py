"""What the hub says about itself: to hosts (its server), to children (its client), and in its own tool.

Kept apart from the SDK so that hub/warm_start.py and hub/first_start.py can answer a host, and shake hands with a
child, before the SDK is imported. tests/integration/test_first_start.py holds these equal to what the SDK says.
"""

from __future__ import annotations

from typing import Any

from hub import __version__

# The handshake revisions of the SDK (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS), oldest first.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
# Who the hub is, to hosts (hub/server.py) and to children (hub/child.py).
SERVER_NAME = "mcp-hub"
SERVER_TITLE = "MCP hub"
SERVER_DESCRIPTION = "Aggregates many MCP servers behind one entry."
# What the hub's SDK server declares (hub/server.py: HubServer and its handlers).
SERVER_CAPABILITIES: dict[str, Any] = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
# The initialize params of the hub's SDK client toward a handshake-era child (hub/child.py connect_child).
CLIENT_PARAMS: dict[str, Any] = {
    "protocolVersion": LATEST_HANDSHAKE,
    "capabilities": {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}},
    "clientInfo": {"name": SERVER_NAME, "version": __version__},
}
HEALTH_TOOL = "hub_health"
HEALTH_TOOL_DEF: dict[str, Any] = {
    "name": HEALTH_TOOL,
    "title": "Hub health",
    "description": "State of the MCP hub and of each server behind it: ready, restarting or failed, with counts "
    "and the last error. Call it when a tool of another server fails.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


def initialize_result(requested: str) -> dict[str, Any]:
    """The hub's answer to a handshake-era initialize, as its SDK server gives it."""
    version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
    info = {"description": SERVER_DESCRIPTION, "name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}
    return {"capabilities": SERVER_CAPABILITIES, "protocolVersion": version, "serverInfo": info}

"""MCP Apps (the `io.modelcontextprotocol/ui` extension) through the hub: app resource URIs renamed as the child's
`ui://` resources are, an app's call by its server's own tool name, app-only tools (docs/namespace.md, decision 014).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hub.relay.naming import expose_uri, map_ui_meta


def expose_app_uris(tool: dict[str, Any], prefix: str) -> dict[str, Any]:
    """`tool` with the app resource URIs of its `_meta` as the host reads them (the very dict if it names none)."""
    if not prefix or "_meta" not in tool:
        return tool
    meta = map_ui_meta(tool["_meta"], lambda uri: expose_uri(prefix, uri))
    return tool if meta is tool["_meta"] else {**tool, "_meta": meta}


def app_only(tool: dict[str, Any]) -> bool:
    """Whether the tool is for its app alone (`_meta.ui.visibility` without `"model"`): listed with its marking, never
    offered to the model. No visibility, or one that is not a list, means the default: model and app."""
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, dict) else None
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return isinstance(visibility, list) and "model" not in visibility


class AmbiguousOwnName(Exception):
    """More than one tool the caller may use has this own name (`exposed`): the hub does not guess which was meant."""

    def __init__(self, name: str, exposed: tuple[str, ...]) -> None:
        super().__init__(name)
        self.exposed = exposed


class OwnNames:
    """Exposed tool names by the child's own name, for calls that an app makes by its server's name."""

    def __init__(self, routes: Iterable[tuple[str, str]]) -> None:
        """`routes`: (exposed name, own name) of every routed tool, in namespace order."""
        self._by_own: dict[str, list[str]] = {}
        for exposed, own in routes:
            if exposed != own:  # an unprefixed child's tool is found by its exposed name already
                self._by_own.setdefault(own, []).append(exposed)

    def resolve(self, own: str, usable: Callable[[str], bool]) -> str | None:
        """The exposed name of the one tool named `own` by its child that the caller may use (`usable`); None if
        none. Raises `AmbiguousOwnName` if more than one."""
        found = tuple(e for e in self._by_own.get(own, ()) if usable(e))
        if len(found) > 1:
            raise AmbiguousOwnName(own, found)
        return found[0] if found else None

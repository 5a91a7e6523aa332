"""How a child's names and URIs are exposed to the host (docs/namespace.md, decision 021): tools and prompts as
`<prefix>_<name>`, resource URIs and templates as `<prefix>+<uri>`, and MCP Apps' `ui://` URIs, which must keep
their scheme, as `ui://<prefix>+<rest>`. A prefix holds neither `_` nor `+`, so children with different prefixes
never expose the same name. Routing never parses names (the catalog keeps a table): these functions build them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Container
from typing import Any

NAME_SEPARATOR = "_"
URI_SEPARATOR = "+"
UI_SCHEME = "ui://"
UI_META_KEY = "ui/resourceUri"  # the flat form of `_meta.ui.resourceUri` that MCP Apps deprecates
MAX_TOOL_NAME = 64
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def expose_name(prefix: str, name: str, siblings: Container[str] = (), *, always_prefix: bool = False) -> str:
    """The host-facing form of a child's tool or prompt `name`, before any fitting to the host alphabet.

    `<prefix>_<name>`, except that a name starting with `<prefix>_` stays as it is unless its `siblings` (the
    child's names of the same kind) have it without the prefix: `status` and `git_status` of server `git` become
    `git_status` and `git_git_status`. So it is one-to-one over a child's names and depends on its own listing
    alone. `always_prefix` (`hub.always_prefix`) puts the prefix before every name.
    """
    if not prefix:
        return name
    head = prefix + NAME_SEPARATOR
    if not always_prefix and name.startswith(head) and name[len(head) :] not in siblings:
        return name
    return head + name


def expose_tool_name(
    prefix: str,
    name: str,
    budget: int = MAX_TOOL_NAME,
    siblings: Container[str] = (),
    *,
    always_prefix: bool = False,
) -> str:
    """The host-facing name of a child's tool (`expose_name`), matching `TOOL_NAME_RE` (the strictest rule among
    hosts and LLM APIs) within `budget` characters (`hub.name_budget`: hosts add a prefix of their own).

    Characters outside `[A-Za-z0-9_-]` become `-`; a name longer than `budget` is cut and given an 8-hex-digit hash
    of the full original, so that long names stay distinct and the same across restarts.
    """
    budget = min(budget, MAX_TOOL_NAME)
    exposed = expose_name(prefix, name, siblings, always_prefix=always_prefix)
    if len(exposed) <= budget and TOOL_NAME_RE.match(exposed):
        return exposed
    cleaned = _INVALID_CHARS.sub("-", exposed) or "-"
    if len(cleaned) <= budget and cleaned != exposed:
        return cleaned
    digest = hashlib.sha256(exposed.encode()).hexdigest()[:8]
    return f"{cleaned[: budget - 9]}-{digest}"


def _scheme(uri: str) -> str:
    """What goes before the prefix: `ui://`, for hosts render only `ui://` apps; else nothing."""
    return UI_SCHEME if uri.startswith(UI_SCHEME) else ""


def expose_uri(prefix: str, uri: str) -> str:
    if not prefix:
        return uri
    scheme = _scheme(uri)
    return f"{scheme}{prefix}{URI_SEPARATOR}{uri[len(scheme) :]}"


def split_uri(exposed: str, prefixes: frozenset[str]) -> tuple[str, str]:
    """Split an exposed URI into (prefix, child URI); prefix '' if it carries none of ours."""
    scheme = _scheme(exposed)
    head, sep, rest = exposed[len(scheme) :].partition(URI_SEPARATOR)
    if sep and head in prefixes:
        return head, scheme + rest
    return "", exposed


def map_ui_meta(meta: Any, rename: Callable[[str], str]) -> Any:
    """A `_meta` with the MCP Apps resource URIs it names (`ui.resourceUri`, and the older `ui/resourceUri`)
    renamed; the very object when it names none."""
    if not isinstance(meta, dict):
        return meta
    changed: dict[str, Any] = {}
    ui = meta.get("ui")
    if isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str):
        changed["ui"] = {**ui, "resourceUri": rename(ui["resourceUri"])}
    if isinstance(meta.get(UI_META_KEY), str):
        changed[UI_META_KEY] = rename(meta[UI_META_KEY])
    return {**meta, **changed} if changed else meta


def map_uris(value: Any, rename: Callable[[str], str]) -> Any:
    """Rename every URI a child hands out inside a result: resource links, embedded resources, read contents, and
    the MCP Apps resource URIs in `_meta`.

    Returns new containers only where something changed, so results without URIs pass through untouched.
    """
    if isinstance(value, list):
        mapped = [map_uris(item, rename) for item in value]
        return mapped if any(a is not b for a, b in zip(mapped, value, strict=True)) else value
    if not isinstance(value, dict):
        return value
    changed: dict[str, Any] = {}
    kind = value.get("type")
    if kind == "resource_link" and isinstance(value.get("uri"), str):
        changed["uri"] = rename(value["uri"])
    elif kind == "resource" and isinstance(value.get("resource"), dict):
        changed["resource"] = map_uris(value["resource"], rename)
    elif "uri" in value and isinstance(value["uri"], str) and kind is None and ("text" in value or "blob" in value):
        changed["uri"] = rename(value["uri"])  # a resource contents item
    if "_meta" in value and (meta := map_ui_meta(value["_meta"], rename)) is not value["_meta"]:
        changed["_meta"] = meta  # an MCP Apps result (or content item) naming its app
    for key in ("content", "contents", "messages"):
        if key in value and isinstance(value[key], list | dict):
            new = map_uris(value[key], rename)
            if new is not value[key]:
                changed[key] = new
    return {**value, **changed} if changed else value

"""MCP extensions (`capabilities.extensions`, SEP-2133) as the hub negotiates them, both ways (decision 016).

The hub declares on either side only what it can carry from one to the other (`RELAYABLE`): a child is told the
extensions its host declared (on a connection of that host's own) or, on the connection that serves every host, what
the hub relays; a host is told the relayable extensions its children declared. An extension the hub does not know
is declared on neither side: a child could otherwise rely on requests or fields the hub drops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hub.protocol.revisions import CLIENT_CAPABILITIES

UI = "io.modelcontextprotocol/ui"

# The extensions the hub knows how to relay, by name: the client settings it declares for each to a child that serves
# every host (the shared connection), where no one host's settings can be passed on. Add one here once the relay
# carries what it needs (its methods routed, its fields and URIs renamed).
RELAYABLE: dict[str, dict[str, Any]] = {UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}

# Methods that belong to an extension, by method name (or by prefix, ending in "/"): a request for one that the hub
# does not serve is refused naming the extension. The `ui/` methods run between an app and its host; none of them
# ever reaches a server.
METHODS: dict[str, str] = {"ui/": UI}


def declared(capabilities: Mapping[str, Any] | None) -> dict[str, Any]:
    """The extensions a peer declared in `capabilities`, by name (malformed entries left out)."""
    extensions = capabilities.get("extensions") if capabilities is not None else None
    if type(extensions) is not dict:
        return {}
    return {name: settings for name, settings in extensions.items() if type(settings) is dict}


def client_capabilities(host_capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The client capabilities the hub declares to a child: what it relays of requests (`CLIENT_CAPABILITIES`), and
    the extensions of the host the connection belongs to that the hub relays, with that host's settings; with no host
    (`None`: the shared connection), every relayable extension with the hub's settings."""
    if host_capabilities is None:
        extensions = {name: dict(settings) for name, settings in RELAYABLE.items()}
    else:
        extensions = {name: settings for name, settings in declared(host_capabilities).items() if name in RELAYABLE}
    if not extensions:
        return CLIENT_CAPABILITIES
    return {**CLIENT_CAPABILITIES, "extensions": extensions}


def server_extensions(children: Iterable[Mapping[str, Any]], *, starting: bool = False) -> dict[str, Any]:
    """The extensions the hub declares to a host: the relayable ones that its children (their server capabilities,
    in order) declared, each with the settings of the first child that declared it. While children are still
    `starting`, what they will declare is not known yet: every relayable extension is declared, with no settings."""
    merged: dict[str, Any] = {}
    for capabilities in children:
        for name, settings in declared(capabilities).items():
            if name in RELAYABLE:
                merged.setdefault(name, settings)
    if starting:
        for name in RELAYABLE:
            merged.setdefault(name, {})
    return merged


def server_capabilities(base: Mapping[str, Any], extensions: Mapping[str, Any]) -> dict[str, Any]:
    """`base` (the hub's server capabilities) with `extensions`, if there are any."""
    return {**base, "extensions": dict(extensions)} if extensions else dict(base)


def owner(method: str) -> str | None:
    """The extension `method` belongs to (`METHODS`), if it is one's."""
    return METHODS.get(method) or next(
        (name for prefix, name in METHODS.items() if prefix.endswith("/") and method.startswith(prefix)), None
    )


def method_not_found(method: str) -> str:
    """The message of the -32601 a host gets for a method the hub does not serve, naming its extension if it is an
    extension's."""
    quoted = repr(method)[:200]
    extension = owner(method)
    if extension == UI:
        return (
            f"Method not found: {quoted} belongs to the extension {extension!r}, between an app and its host; "
            "it never reaches a server"
        )
    if extension is not None:
        return f"Method not found: {quoted} belongs to the extension {extension!r}, which the hub does not relay"
    vendor, slash, _ = method.partition("/")
    if slash and "." in vendor:  # `{vendor-prefix}/...`: a method of an extension the hub does not know
        return (
            f"Method not found: {quoted} is a method of an extension the hub does not relay "
            f"(relayed: {', '.join(sorted(RELAYABLE))})"
        )
    return f"Method not found: {quoted}"

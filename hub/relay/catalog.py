"""The merged namespace: an immutable snapshot of what the host sees, rebuilt whenever a child's listing changes.

Collisions are resolved by config order: the child declared first in servers.yaml keeps the name, later ones are
left out and reported, so adding a server never takes over an existing one's names. A listing is encoded once per
namespace, protocol revision and view, and kept on the namespace it was made from: valid exactly as long as it is.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from hub.access.hidden import Tally
from hub.access.policy import View
from hub.config.lock import FieldChange, Lock
from hub.config.settings import HubSettings
from hub.protocol import revisions
from hub.protocol.headers import header_problem
from hub.protocol.jsonrpc import encode
from hub.relay.apps import OwnNames, app_only, expose_app_uris
from hub.relay.exposure import NO_RULES, ToolRules, shape_tool, tool_suffixes
from hub.relay.naming import expose_name, expose_tool_name, expose_uri, split_uri
from hub.relay.search import ToolIndex
from hub.upstream.child import Child, ChildState
from hub.upstream.listing import CacheHint, Listing

# The list methods: the result key of each, the namespace attribute it lists, and the key of a listed item that
# policy globs match (its exposed name, or its exposed URI or template).
LISTS = {
    "tools/list": ("tools", "tools", "name"),
    "prompts/list": ("prompts", "prompts", "name"),
    "resources/list": ("resources", "resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "templates", "uriTemplate"),
}
SEARCH_TOOL = "hub_search_tools"
CALL_TOOL = "hub_call_tool"
# Listed whatever the policy says of their own names: a search's results, and the call hub_call_tool makes, are
# decided by the caller's policy as the found or named tool's own (hub.relay.builtins).
GATEWAY_TOOLS = frozenset({SEARCH_TOOL, CALL_TOOL})
_log = structlog.get_logger("hub")


@dataclass(frozen=True)
class Route:
    """Where an exposed name leads: the child's name and the child's own name or URI for the item."""

    child: str
    original: str


@dataclass(frozen=True)
class Collision:
    kind: str
    exposed: str
    kept: str
    dropped: str


@dataclass(frozen=True)
class Renamed:
    child: str
    original: str
    exposed: str


@dataclass(frozen=True)
class RejectedTool:
    """A child's tool left out of the listing because its definition breaks a rule of the protocol."""

    child: str
    original: str
    problem: str


@dataclass(frozen=True)
class Quarantined:
    """A child's tool or prompt that differs from its pin in servers.lock (or is new since), held back."""

    child: str
    kind: str  # "tool", "prompt", or "instructions" (never held: the hub passes no child's instructions on)
    original: str
    exposed: str
    verdict: str  # "changed" or "new"
    changes: tuple[FieldChange, ...]
    held: bool  # False with on_change: warn (listed, only reported)

    @property
    def approve(self) -> str:
        return f"hub pin --approve {self.child} {self.original}".rstrip()


@dataclass(frozen=True)
class Namespace(Listing):
    """What the host sees: the merged listing of every child (exposed names), and where each name leads."""

    tool_routes: dict[str, Route] = field(default_factory=dict)
    prompt_routes: dict[str, Route] = field(default_factory=dict)
    resource_routes: dict[str, Route] = field(default_factory=dict)
    template_routes: dict[str, Route] = field(default_factory=dict)
    # Children in config order with their prefix and templates, for routing URIs that no listing names.
    prefixes: dict[str, str] = field(default_factory=dict)
    child_templates: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # parsed UriTemplates
    collisions: tuple[Collision, ...] = ()
    renamed: tuple[Renamed, ...] = ()
    hidden_tools: dict[str, int] = field(default_factory=dict)
    # What the hub enforces on each routed tool, and the names the config holds back: name -> (why, outcome).
    tool_rules: dict[str, ToolRules] = field(default_factory=dict)
    held_back: dict[str, tuple[str, str]] = field(default_factory=dict)
    quarantined: tuple[Quarantined, ...] = ()
    unlisted: frozenset[str] = frozenset()  # routed tools a listing leaves out (`exposure: search`): found by search
    rejected: tuple[RejectedTool, ...] = ()
    _encoded: dict[tuple[str, str, int, View | None], bytes] = field(default_factory=dict, compare=False, repr=False)
    _filtered: dict[tuple[str, int, View | None], tuple[tuple[dict[str, Any], ...], Tally]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def route_uri(self, exposed: str) -> Route | None:
        """The child that owns an exposed URI: listed, prefixed, or matched by an unprefixed child's template."""
        if (route := self.resource_routes.get(exposed)) is not None:
            return route
        by_prefix = {p: name for name, p in self.prefixes.items() if p}
        prefix, uri = split_uri(exposed, frozenset(by_prefix))
        if prefix:
            return Route(by_prefix[prefix], uri)
        unprefixed = [name for name, p in self.prefixes.items() if not p]
        for name in unprefixed:
            if any(t.match(uri) is not None for t in self.child_templates.get(name, ())):
                return Route(name, uri)
        return Route(unprefixed[0], uri) if len(unprefixed) == 1 else None

    def search(self, query: str, limit: int, view: View) -> list[dict[str, Any]]:
        """The routed tools (listed or not) that best match `query`, among those `view` allows (`hub.relay.search`)."""
        return self._index.search(query, limit, lambda name: view.allows(name, writes=self.writes(name)))

    @functools.cached_property
    def _index(self) -> ToolIndex:
        """The search index of this namespace's tools, made on its first search; a tool for its app alone is never
        offered to the model, so never found."""
        return ToolIndex([t for t in self.tools if t.get("name") not in self.app_only])

    @functools.cached_property
    def app_only(self) -> frozenset[str]:
        """The exposed names of the tools for their app alone: never offered to the model (search, hub_call_tool)."""
        return frozenset(str(t.get("name")) for t in self.tools if app_only(t))

    @functools.cached_property
    def own_names(self) -> OwnNames:
        """The routed tools by their child's own names: an app calls its server's tools by those."""
        return OwnNames((exposed, route.original) for exposed, route in self.tool_routes.items())

    def writes(self, tool: str) -> bool:
        """Whether the exposed `tool` may change something: not effectively read-only (policy `read_only`)."""
        return not self.tool_rules.get(tool, NO_RULES).read_only

    def listing(
        self, method: str, version: str, builtin: tuple[dict[str, Any], ...] = (), view: View | None = None
    ) -> bytes:
        """The encoded result of a list request at `version` as `view` shows it (the items its identity may use;
        all without a view), made once per namespace, revision and view."""
        key = (method, version, len(builtin), view)
        encoded = self._encoded.get(key)
        if encoded is None:
            result_key, attribute, _ = LISTS[method]
            items = self._visible(method, builtin, view)[0]
            shaped, problems = revisions.sieve_items(method, result_key, version, items)
            for problem in problems:
                _log.warning("listing_item_dropped", method=method, protocol=version, problem=problem)
            result: dict[str, Any] = {result_key: shaped}
            if revisions.is_modern(version):
                # The children's hints, merged: the smallest ttl; private if any child's is, or if the caller's
                # policy chose what this caller sees.
                hint = self.hints.get(attribute, _NO_HINT)
                result["ttlMs"] = hint.ttl_ms
                result["cacheScope"] = "private" if hint.private or (view is not None and not view.open) else "public"
                result = revisions.stamp(result, method)
            encoded = self._encoded[key] = encode(result)
        return encoded

    def tally(self, method: str, builtin: tuple[dict[str, Any], ...] = (), view: View | None = None) -> Tally:
        """What the policy filter of `listing` (the same call, so the same decisions) showed and hid, by rule."""
        return self._visible(method, builtin, view)[1]

    def _visible(
        self, method: str, builtin: tuple[dict[str, Any], ...], view: View | None
    ) -> tuple[tuple[dict[str, Any], ...], Tally]:
        """The items of a list request that `view` lets its identity see (the one policy filter of a listing), and
        what each deciding rule hid; made once per namespace, method and view."""
        key = (method, len(builtin), view)
        found = self._filtered.get(key)
        if found is not None:
            return found
        _, attribute, key_name = LISTS[method]
        items = (*builtin, *getattr(self, attribute))
        if method == "tools/list" and self.unlisted:
            items = tuple(i for i in items if i.get("name") not in self.unlisted)
        tally = Tally()
        if view is not None and not view.open:
            tools, kept = method == "tools/list", []
            for item in items:
                name = str(item.get(key_name))
                decision = view.decide(name, writes=tools and self.writes(name))
                if (tools and name in GATEWAY_TOOLS) or decision.allowed:
                    kept.append(item)
                else:
                    tally.hide(decision.rule)
            items = tuple(kept)
        tally.shown = len(items)
        found = self._filtered[key] = (items, tally)
        return found


_DEFAULT_SETTINGS = HubSettings()
_NO_HINT = CacheHint(0, private=False)  # a kind no child lists: only the hub's own items, the same for everyone
_KEYS = {"tool": "name", "prompt": "name", "resource": "uri", "template": "uriTemplate"}  # an item's exposed key


class _Merger:
    """The namespace being built, child by child in config order; the first to expose a name keeps it."""

    def __init__(self, reserved: frozenset[str], lock: Lock | None, settings: HubSettings) -> None:
        self.lock = lock
        self.settings = settings
        self.unlisted: set[str] = set()
        self.items: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _KEYS}
        self.routes: dict[str, dict[str, Route]] = {kind: {} for kind in _KEYS}
        self.routes["tool"].update({n: Route("hub", n) for n in reserved})
        self.collisions: list[Collision] = []
        self.renamed: list[Renamed] = []
        self.hidden: dict[str, int] = {}
        self.templates: dict[str, tuple[Any, ...]] = {}
        self.rules: dict[str, ToolRules] = {n: _BUILTIN_RULES for n in reserved}
        self.held_back: dict[str, tuple[str, str]] = {}
        self.quarantined: list[Quarantined] = []
        self.rejected: list[RejectedTool] = []
        self.hints: dict[str, CacheHint] = {}

    def add(self, kind: str, item: dict[str, Any], exposed: str, route: Route) -> bool:
        routes, key = self.routes[kind], _KEYS[kind]
        if exposed in routes:
            self.collisions.append(Collision(kind, exposed, routes[exposed].child, route.child))
            return False
        routes[exposed] = route
        self.items[kind].append(item if item.get(key) == exposed else {**item, key: exposed})
        return True

    def add_tool(self, child: Child, tool: dict[str, Any], siblings: frozenset[str]) -> None:
        """A child tool as the config exposes it: filtered, shaped (overrides), named within the budget (among its
        `siblings`, `tool_suffixes`), held back (read_only, quarantine) or listed."""
        name = str(tool.get("name", ""))
        if not child.config.tools.allows(name):
            self.hidden[child.name] = self.hidden.get(child.name, 0) + 1
            return
        problem = header_problem(tool.get("inputSchema"))
        if problem is not None:
            self.rejected.append(RejectedTool(child.name, name, problem))
            return
        shaped = shape_tool(child.config, child.name, tool)
        always = self.settings.always_prefix
        exposed = expose_tool_name(
            child.prefix, shaped.suffix, self.settings.name_budget, siblings, always_prefix=always
        )
        if exposed != expose_name(child.prefix, shaped.suffix, siblings, always_prefix=always):
            self.renamed.append(Renamed(child.name, name, exposed))
        if shaped.held_back is not None:
            self.held_back.setdefault(exposed, (shaped.held_back, "read_only"))
        elif not self._quarantines(child, "tool", tool, exposed) and self.add(
            "tool", expose_app_uris(shaped.definition, child.prefix), exposed, Route(child.name, name)
        ):
            self.rules[exposed] = shaped.rules
            if not self._listed(child, name, exposed):
                self.unlisted.add(exposed)

    def _listed(self, child: Child, name: str, exposed: str) -> bool:
        """Whether a host's tools/list shows the tool, by its child's (else the hub's) `exposure`."""
        mode = child.config.exposure or self.settings.exposure
        if mode == "full":
            return True
        return mode == "hybrid" and (
            any(fnmatch.fnmatchcase(name, g) for g in child.config.always_visible)
            or any(fnmatch.fnmatchcase(exposed, g) for g in self.settings.always_visible)
        )

    def add_child(self, child: Child) -> None:
        listing, prefix = child.listing, child.prefix
        for kind in ("tools", "prompts", "resources", "templates"):
            # A list read without hints (none was read: the child is not up) but holding items said nothing.
            hint = listing.hints.get(kind) or (CacheHint() if getattr(listing, kind) else None)
            if hint is not None:
                self.hints[kind] = hint if kind not in self.hints else self.hints[kind].merge(hint)
        lock = self.lock
        if lock is not None and child.config.on_change != "off" and child.state is ChildState.READY:
            verdict = lock.instructions_verdict(child.name, child.instructions)
            if verdict != "pinned":  # the hub passes no child's instructions on: reported, nothing to hold back
                self.quarantined.append(Quarantined(child.name, "instructions", "", "", verdict, (), held=False))
        siblings = tool_suffixes(child.config, listing.tools)
        for tool in listing.tools:
            self.add_tool(child, tool, siblings)
        prompts = frozenset(str(p.get("name", "")) for p in listing.prompts)
        for prompt in listing.prompts:
            name = str(prompt.get("name", ""))
            exposed = expose_name(prefix, name, prompts, always_prefix=self.settings.always_prefix)
            if not self._quarantines(child, "prompt", prompt, exposed):
                self.add("prompt", prompt, exposed, Route(child.name, name))
        for kind, items in (("resource", listing.resources), ("template", listing.templates)):
            for item in items:
                uri = str(item.get(_KEYS[kind], ""))
                self.add(kind, item, expose_uri(prefix, uri), Route(child.name, uri))
        # Only an unprefixed child's URIs need its templates to be routed.
        self.templates[child.name] = () if prefix else _parse_templates(listing.templates)

    def _quarantines(self, child: Child, kind: str, item: dict[str, Any], exposed: str) -> bool:
        """Whether `item` is held back for differing from its pin (with a lock and `on_change: quarantine`)."""
        lock, on_change = self.lock, child.config.on_change
        if lock is None or on_change == "off":
            return False
        verdict = lock.tool_verdict(child.name, item) if kind == "tool" else lock.prompt_verdict(child.name, item)
        if verdict == "pinned":
            return False
        original = str(item.get("name", ""))
        changes = lock.tool_changes(child.name, item) if kind == "tool" else lock.prompt_changes(child.name, item)
        held = on_change == "quarantine"
        entry = Quarantined(child.name, kind, original, exposed, verdict, tuple(changes), held)
        self.quarantined.append(entry)
        if held:
            why = "is new since" if verdict == "new" else "has changed since"
            message = (
                f"{kind} {exposed!r} of server '{child.name}' {why} it was pinned in servers.lock, so it is "
                f"quarantined: review it with `hub pin --diff {child.name}`, accept it with `{entry.approve}`"
            )
            self.held_back.setdefault(exposed, (message, "quarantined"))
        return held


def _parse_templates(templates: tuple[dict[str, Any], ...]) -> tuple[Any, ...]:
    if not templates:  # the SDK's package loads its client and server whole (0.3 s, 16 MB): not for nothing
        return ()
    from mcp.shared.uri_template import UriTemplate

    parsed = []
    for template in templates:
        try:
            parsed.append(UriTemplate.parse(str(template.get("uriTemplate", ""))))
        except Exception:  # a template we cannot parse still lists; it just routes by prefix only
            continue
    return tuple(parsed)


def build_namespace(
    children: Sequence[Child],
    reserved: frozenset[str] = frozenset(),
    lock: Lock | None = None,
    settings: HubSettings = _DEFAULT_SETTINGS,
) -> Namespace:
    """Merge the listings of `children` (in config order) into one namespace; `reserved` tool names are the hub's.
    With a `lock`, what differs from its pin is quarantined (each child's `on_change`); every exposed tool name is
    at most `settings.name_budget` characters; `exposure` decides which tools a listing shows."""
    merger = _Merger(reserved, lock, settings)
    for child in children:
        merger.add_child(child)
    tool_routes = {name: route for name, route in merger.routes["tool"].items() if name not in reserved}
    return Namespace(
        tools=tuple(merger.items["tool"]),
        prompts=tuple(merger.items["prompt"]),
        resources=tuple(merger.items["resource"]),
        templates=tuple(merger.items["template"]),
        tool_routes=tool_routes,
        prompt_routes=merger.routes["prompt"],
        resource_routes=merger.routes["resource"],
        template_routes=merger.routes["template"],
        prefixes={c.name: c.prefix for c in children},
        child_templates=merger.templates,
        collisions=tuple(merger.collisions),
        renamed=tuple(merger.renamed),
        hidden_tools=merger.hidden,
        tool_rules=merger.rules,
        held_back={n: why for n, why in merger.held_back.items() if n not in tool_routes},
        quarantined=tuple(merger.quarantined),
        unlisted=frozenset(merger.unlisted),
        rejected=tuple(merger.rejected),
        hints=merger.hints,
    )


_BUILTIN_RULES = ToolRules(read_only=True)  # the hub's own tools only read


class Catalog:
    """The children in config order and the namespace made of their listings; reports what a rebuild finds."""

    def __init__(
        self,
        reserved: Callable[[], frozenset[str]],
        pins: Callable[[], Lock | None] = lambda: None,
        settings: Callable[[], HubSettings] = lambda: _DEFAULT_SETTINGS,
    ) -> None:
        self.children: dict[str, Child] = {}
        self.namespace = Namespace()
        self.reserved = reserved  # the hub's own tool names now (they depend on the config)
        self._pins = pins  # servers.lock as the config last loaded it
        self._settings = settings
        self._reported: set[tuple[str, ...]] = set()  # what a rebuild logged already: each thing once

    def rebuild(self) -> list[str]:
        """Make the namespace anew from the children's listings; the kinds whose listing changed."""
        old = self.namespace
        new = self.namespace = build_namespace(
            list(self.children.values()), self.reserved(), self._pins(), self._settings()
        )
        self._report(new)
        return [
            kind
            for kind, before, after in (
                ("tools", old.tools, new.tools),
                ("prompts", old.prompts, new.prompts),
                ("resources", old.resources + old.templates, new.resources + new.templates),
            )
            if before != after
        ]

    def _report(self, namespace: Namespace) -> None:
        key: tuple[str, ...]
        for c in namespace.collisions:
            if (key := ("collision", c.kind, c.exposed, c.dropped)) not in self._reported:
                self._reported.add(key)
                _log.warning(
                    "name_collision",
                    kind=c.kind,
                    name=c.exposed,
                    kept=c.kept,
                    dropped=c.dropped,
                    fix=f"give server '{c.dropped}' a different prefix in servers.yaml",
                )
        for r in namespace.renamed:
            if (key := ("renamed", r.child, r.original)) not in self._reported:
                self._reported.add(key)
                _log.warning(
                    "tool_renamed",
                    child=r.child,
                    original=r.original,
                    exposed=r.exposed,
                    reason="exposed tool names must match ^[A-Za-z0-9_-]{1,64}$ and fit hub.name_budget",
                )
        for rejected in namespace.rejected:
            if (key := ("rejected", rejected.child, rejected.original, rejected.problem)) not in self._reported:
                self._reported.add(key)
                _log.warning("tool_rejected", child=rejected.child, tool=rejected.original, problem=rejected.problem)
        for q in namespace.quarantined:
            if (key := ("quarantined", q.child, q.kind, q.original, repr(q.changes))) not in self._reported:
                self._reported.add(key)
                _log.warning(
                    "tool_quarantined" if q.held else f"{q.kind}_changed",
                    child=q.child,
                    kind=q.kind,
                    original=q.original,
                    exposed=q.exposed,
                    verdict=q.verdict,
                    changes=[{"field": c.field, "before": c.before, "after": c.after} for c in q.changes],
                    approve=q.approve,
                )

"""The differential harness: one server, driven by the same script directly and through the hub.

A module of this package names one third-party server (a `ServerSpec`). Its `bench` fixture starts, once for the
module, the server directly (one connection per host era), the hub over stdio (one hub per era: a stdio host is a
process) and `hub serve --http` (one hub, one session per era), each hub running that server alone as its only child.
Each test runs one aspect of the script (`ASPECTS`) on the direct connection and on one hub connection of the same
era, from the same starting state (`ServerSpec.reset`), and compares the answers after undoing the documented renames
(`normalise`; the names of tools and prompts by the hub's own rule, hub.relay.naming): nothing else may differ.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from hub.config.settings import DEFAULT_NAME_BUDGET
from hub.relay.naming import expose_name, expose_tool_name
from tests.support.children import write_config
from tests.support.mcp_client import Host, connect_host, hub_params
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

RAW: Any = TypeAdapter(dict[str, Any])
OLD, NEW = "2025-11-25", "2026-07-28"
# How each host era connects: a 2025-11-25 host does the handshake; a 2026-07-28 host discovers (server/discover) and,
# as the revision says, falls back to the handshake with a server that does not speak 2026-07-28.
ERAS = {OLD: "legacy", NEW: "auto"}
FRONTS = ("stdio", "http")
# The script's aspects, in the order of the matrix's columns. Each server runs those it has something for.
ASPECTS = (
    "capabilities",
    "lists",
    "tools",
    "prompts",
    "resources",
    "progress",
    "cancel",
    "logging",
    "subscribe",
    "sampling",
    "elicit",
    "roots",
    "tasks",
    "apps",
)
# Keys a hub adds to a 2026-07-28 answer and documents as its own (docs/protocols.md, "Protocol revisions"): the
# result's era stamp and the hub's serverInfo. Dropped on both sides: they say who answered, not what.
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
# What a step yields: a JSON value, compared after normalisation.
Outcome = Any
Step = Callable[["Side"], Awaitable[Outcome]]


@dataclass
class ServerSpec:
    """One third-party server and its script.

    `calls` is every tool call, in order (state carries from one to the next within the aspect); the test fails if the
    server lists a tool that no call uses, so that the script keeps up with the server. `volatile` are (regex,
    replacement) pairs applied to both sides' JSON: values the server itself makes up on each call (the clock, random
    ids), never anything the hub touches.
    """

    name: str
    entry: Callable[[Path], dict[str, Any]]
    missing: Callable[[], str | None] = lambda: None
    reset: Callable[[Path], None] = lambda workspace: None
    calls: Callable[[Path], list[tuple[str, dict[str, Any]]]] = lambda workspace: []
    prompts: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    templates: dict[str, list[str]] = field(default_factory=dict)
    completions: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    features: dict[str, Step] = field(default_factory=dict)
    # Resources a server adds to its list as a connection's history goes (a direct connection serves every front of
    # its era, a hub's child only that front's): left out of resources/list on both sides.
    session_resources: str | None = None
    # The tools the features call (the `tools` aspect's check that every listed tool is called counts them).
    feature_tools: frozenset[str] = frozenset()
    volatile: list[tuple[str, str]] = field(default_factory=list)
    # Aspects only a 2025-11-25 host runs: what the 2026-07-28 revision removed without a replacement a host could
    # compare (session-wide log messages: a 2026-07-28 host opts in per request; roots/list_changed).
    handshake_only: frozenset[str] = frozenset()
    # (aspect, front or None for both, era or None for both) -> why it differs, as the docs say: an xfail(strict) case.
    gaps: dict[tuple[str, str | None, str | None], str] = field(default_factory=dict)

    def aspects(self) -> list[str]:
        has = {"capabilities", "lists", "tools", "prompts", "resources", *self.features}
        return [a for a in ASPECTS if a in has]


@dataclass
class DiffHost(Host):
    """The host of every side: the same answers to the server's requests, roots naming the server's workspace."""

    root: str = "file:///"
    roots_asked: int = 0

    async def on_roots(self, ctx: ClientRequestContext) -> Any:
        self.roots_asked += 1
        self._tell()
        return types.ListRootsResult(roots=[types.Root(uri=self.root, name="workspace")])


def hub_name(kind: str, prefix: str, name: str, own: frozenset[str]) -> str:
    """The name the hub exposes a server's tool or prompt (`kind`: "tools", "prompts") by, among its `own` names of
    that kind: the hub's own rule (hub.relay.naming), with the default name budget the bench's config keeps."""
    if kind == "tools":
        return expose_tool_name(prefix, name, DEFAULT_NAME_BUDGET, own)
    return expose_name(prefix, name, own)


@dataclass
class Side:
    """One connection the script runs on: directly to the server, or through a front of the hub."""

    front: str  # "direct", "stdio" or "http"
    era: str
    client: Client
    host: DiffHost
    prefix: str | None  # the hub's prefix for the server; None directly
    workspace: Path
    # The server's own tool and prompt names (as it lists them directly): the siblings the hub names each among.
    own_tools: frozenset[str] = frozenset()
    own_prompts: frozenset[str] = frozenset()

    def tool(self, name: str) -> str:
        """The name this connection calls the server's tool `name` by: the hub's, or its own."""
        return name if self.prefix is None else hub_name("tools", self.prefix, name, self.own_tools)

    def prompt(self, name: str) -> str:
        return name if self.prefix is None else hub_name("prompts", self.prefix, name, self.own_prompts)

    def uri(self, uri: str) -> str:
        return uri if self.prefix is None else f"{self.prefix}+{uri}"

    @property
    def modern(self) -> bool:
        """Whether this connection speaks 2026-07-28 (a 2026 host on a server that does not falls back)."""
        return self.client.protocol_version == NEW

    async def send(self, request: Any, **options: Any) -> Outcome:
        """The raw JSON answer to one request (result or error), as the host received it."""
        try:
            return {"result": await self.client.session.send_request(request, RAW, **options)}
        except MCPError as error:
            return {"error": error.error.model_dump(by_alias=True, exclude_none=True, mode="json")}

    async def send_unchecked(self, method: str, params: dict[str, Any]) -> Outcome:
        """A request whose answer the SDK's client cannot parse: a task-augmented tools/call gets a CreateTaskResult,
        which the client (it does not speak 2025-11-25 tasks) would reject as an invalid CallToolResult. Sent on the
        session's dispatcher (a private attribute of the SDK: tests only), answer unvalidated."""
        dispatcher = self.client.session._dispatcher
        try:
            return {"result": await dispatcher.send_raw_request(method, params, {"timeout": WAIT})}
        except MCPError as error:
            return {"error": error.error.model_dump(by_alias=True, exclude_none=True, mode="json")}

    async def call(self, tool: str, arguments: dict[str, Any], **options: Any) -> Outcome:
        params = types.CallToolRequestParams(name=self.tool(tool), arguments=arguments)
        return await self.send(types.CallToolRequest(params=params), **options)

    async def call_driven(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        """A tools/call through the SDK's own loop (it answers a 2026-07-28 input-required round as a host does)."""
        try:
            result = await self.client.call_tool(self.tool(tool), arguments)
        except MCPError as error:
            return {"error": error.error.model_dump(by_alias=True, exclude_none=True, mode="json")}
        return {"result": result.model_dump(by_alias=True, exclude_none=True, mode="json")}

    async def list_all(self, method: str) -> Outcome:
        """Every page of a list (the hub answers one page; a server may paginate)."""
        kinds = {
            "tools/list": types.ListToolsRequest,
            "prompts/list": types.ListPromptsRequest,
            "resources/list": types.ListResourcesRequest,
            "resources/templates/list": types.ListResourceTemplatesRequest,
        }
        items: list[Any] = []
        cursor: str | None = None
        for _page in range(100):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            answer = await self.send(kinds[method](params=params))
            if "error" in answer:
                return answer
            page = dict(answer["result"])
            cursor = page.pop("nextCursor", None)
            key = next(k for k in page if isinstance(page[k], list))
            items.extend(page.pop(key))
            if not cursor:
                return {"result": {**page, key: items}}
        raise AssertionError(f"{method}: more than 100 pages")


@dataclass
class Bench:
    spec: ServerSpec
    workspace: Path
    sides: dict[tuple[str, str], Side]


def server_command(entry: dict[str, Any]) -> StdioServerParameters:
    return StdioServerParameters(
        command=entry["command"], args=entry.get("args", []), env=entry.get("env"), cwd=entry.get("cwd")
    )


def _client(target: Any, host: DiffHost, era: str) -> Client:
    return Client(
        target,
        mode=ERAS[era],
        message_handler=host.on_message,
        logging_callback=host.on_log,
        sampling_callback=host.on_sampling,
        elicitation_callback=host.on_elicitation,
        list_roots_callback=host.on_roots,
        read_timeout_seconds=WAIT,
        cache=None,
    )


async def _ready(sides: dict[tuple[str, str], Side]) -> None:
    """Until each hub lists the server's tools (a hub answers at once, while its child is still starting); each hub
    side told the server's own names, which the hub's exposed names depend on."""
    for era in ERAS:
        tools = await _own_names(sides["direct", era], "tools/list")
        prompts = await _own_names(sides["direct", era], "prompts/list")
        for front in FRONTS:
            side = sides[front, era]
            side.own_tools, side.own_prompts = tools, prompts
            await _listed(side, {side.tool(t) for t in tools})


async def _own_names(direct: Side, method: str) -> frozenset[str]:
    """The names a server lists directly (none when it does not offer the list)."""
    answer = await direct.list_all(method)
    items = next((v for v in answer.get("result", {}).values() if isinstance(v, list)), [])
    return frozenset(str(item["name"]) for item in items)


async def _listed(side: Side, names: set[str]) -> None:
    with anyio.fail_after(WAIT):
        # The child starts in another process; how a host hears list_changed depends on its era: poll.
        while not names <= {t["name"] for t in (await side.list_all("tools/list"))["result"]["tools"]}:  # noqa: ASYNC110
            await anyio.sleep(0.1)


@asynccontextmanager
async def open_bench(spec: ServerSpec, tmp: Path) -> AsyncIterator[Bench]:
    """Every side of one server, opened concurrently once for the module and closed at its end (bounded)."""
    if (reason := spec.missing()) is not None:
        pytest.skip(reason)
    workspace = tmp / "workspace"
    workspace.mkdir()
    spec.reset(workspace)
    entry = spec.entry(workspace)
    config = write_config(tmp, {spec.name: entry}, {"health_tool": False})
    hosts = {(front, era): DiffHost(root=workspace.as_uri()) for front in ("direct", *FRONTS) for era in ERAS}
    opened: dict[Any, Any] = {}
    close = anyio.Event()

    async def hold(key: Any, context: AbstractAsyncContextManager[Any]) -> None:
        async with context as value:
            opened[key] = value
            await close.wait()

    async def wait_opened(count: int) -> None:
        with anyio.fail_after(WAIT):
            while len(opened) < count:  # noqa: ASYNC110 - each side opens in a task of its own
                await anyio.sleep(0.05)

    async with anyio.create_task_group() as group:
        group.start_soon(hold, "url", serve_hub_http(config, tmp / "hub-http.log"))
        for era in ERAS:
            group.start_soon(hold, ("direct", era), _client(server_command(entry), hosts["direct", era], era))
            target = hub_params(config, tmp / f"hub-stdio-{era}.log")
            group.start_soon(hold, ("stdio", era), connect_host(target, hosts["stdio", era], mode=ERAS[era]))
        await wait_opened(5)
        for era in ERAS:
            group.start_soon(hold, ("http", era), connect_host(opened["url"], hosts["http", era], mode=ERAS[era]))
        await wait_opened(7)
        sides = {
            key: Side(key[0], key[1], opened[key], host, None if key[0] == "direct" else spec.name, workspace)
            for key, host in hosts.items()
        }
        await _ready(sides)
        try:
            yield Bench(spec, workspace, sides)
        finally:
            close.set()


def cells(spec: ServerSpec) -> list[Any]:
    """The (front, era, aspect) parameters of one server's test, its known gaps marked xfail(strict)."""
    params = []
    for front in FRONTS:
        for era in ERAS:
            for aspect in spec.aspects():
                if era != OLD and aspect in spec.handshake_only:
                    continue
                reasons = [
                    why
                    for (a, f, e), why in spec.gaps.items()
                    if a == aspect and f in (None, front) and e in (None, era)
                ]
                # Only a difference (AssertionError) is the known gap: a timeout or a crash there still fails.
                marks = [
                    pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"documented: {why}")
                    for why in reasons[:1]
                ]
                params.append(pytest.param(front, era, aspect, marks=marks, id=f"{front}-{era}-{aspect}"))
    return params


# The script --------------------------------------------------------------------------------------------------------


def declared(capabilities: types.ServerCapabilities) -> list[str]:
    """The capabilities a server declares, by name (what they hold besides is the hub's own: it serves many)."""
    return sorted(capabilities.model_dump(by_alias=True, exclude_none=True))


def offered(capabilities: types.ServerCapabilities) -> list[str]:
    """The list methods a host calls on a server that declares these capabilities."""
    methods = ["tools/list"] if capabilities.tools else []
    methods += ["prompts/list"] if capabilities.prompts else []
    return methods + (["resources/list", "resources/templates/list"] if capabilities.resources else [])


async def run_aspect(
    side: Side, spec: ServerSpec, aspect: str, reference: types.ServerCapabilities
) -> list[tuple[str, Outcome]]:
    """One aspect of the script on one side: a list of (step, answer). `reference` are the capabilities the server
    declares directly: a host asks a server only for what they declare."""
    if aspect == "capabilities":
        mine = declared(side.client.server_capabilities)
        return [(f"capability {name}", name in mine) for name in declared(reference)]
    if aspect == "lists":
        return [(method, await side.list_all(method)) for method in offered(reference)]
    if aspect == "tools":
        calls = spec.calls(side.workspace)
        return [(f"{n}: tools/call {tool}", await side.call(tool, args)) for n, (tool, args) in enumerate(calls)]
    if aspect == "prompts":
        return await _prompts(side, spec)
    if aspect == "resources":
        return await _resources(side, spec)
    return [(aspect, await spec.features[aspect](side))]


async def _prompts(side: Side, spec: ServerSpec) -> list[tuple[str, Outcome]]:
    steps: list[tuple[str, Outcome]] = []
    for name, arguments in spec.prompts:
        params = types.GetPromptRequestParams(name=side.prompt(name), arguments=arguments)
        steps.append((f"prompts/get {name}", await side.send(types.GetPromptRequest(params=params))))
    for ref, argument in spec.completions:
        steps.append((f"completion/complete {ref} {argument}", await complete(side, ref, argument)))
    return steps


async def _resources(side: Side, spec: ServerSpec) -> list[tuple[str, Outcome]]:
    """Every resource listed, read by the URI listed; a concrete URI of each template."""
    steps: list[tuple[str, Outcome]] = []
    listed = await side.list_all("resources/list")
    for resource in listed.get("result", {}).get("resources", []):
        own = resource["uri"] if side.prefix is None else own_uri(resource["uri"], side.prefix)
        steps.append((f"resources/read {own}", await read(side, resource["uri"])))
    for template, uris in spec.templates.items():
        for uri in uris:
            steps.append((f"resources/read {uri} ({template})", await read(side, side.uri(uri))))
    return steps


async def read(side: Side, exposed_uri: str) -> Outcome:
    return await side.send(types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=exposed_uri)))


async def complete(side: Side, ref: dict[str, Any], argument: dict[str, str]) -> Outcome:
    if ref["type"] == "ref/prompt":
        exposed: Any = types.PromptReference(type="ref/prompt", name=side.prompt(ref["name"]))
    else:
        exposed = types.ResourceTemplateReference(type="ref/resource", uri=side.uri(ref["uri"]))
    params = types.CompleteRequestParams(ref=exposed, argument=types.CompletionArgument(**argument))
    return await side.send(types.CompleteRequest(params=params))


# The comparison ----------------------------------------------------------------------------------------------------


def normalise(value: Any, prefix: str | None, direct_modern: bool, expose: str | None = None) -> Any:
    """Undo the hub's documented renames (docs/namespace.md) and drop what it documents as its own.

    - the names of tools and prompts (in lists): the direct answer's (given `expose`, the hub's prefix) renamed by
      the hub's own rule (hub.relay.naming, each list's names the siblings), since an exposed name alone does not
      say whether the prefix was put before it; `<prefix>+<uri>` (`ui://<prefix>+<rest>` for an MCP
      app's) of every `uri`, `uriTemplate` and app `resourceUri` (lists, contents, resource links, embedded
      resources, a tool's `_meta`) back to the server's own;
    - the logger of a relayed log message (`<prefix>/<logger>`, or `<prefix>` for none) and the `<prefix>: `
      before a relayed error's message;
    - `resultType` and the `io.modelcontextprotocol/serverInfo` stamp of a 2026-07-28 answer (who answered);
    - `ttlMs` and `cacheScope` of a list, when the server itself did not speak 2026-07-28 (then the values are the
      hub's alone). When it did, they are compared: issue 30 says they come from the children.
    """
    if isinstance(value, list):
        return [normalise(v, prefix, direct_modern, expose) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "resultType" or (key in ("ttlMs", "cacheScope") and not direct_modern):
            continue
        if key == "_meta" and isinstance(item, dict):
            item = {k: v for k, v in item.items() if k != SERVER_INFO}
            if not item:
                continue
        if prefix is not None and key == "logger" and item == prefix:
            continue  # a log message without a logger gets the server's name (docs/protocols.md)
        if prefix is not None and isinstance(item, str):
            item = _unprefix(key, item, prefix)
        out[key] = normalise(item, prefix, direct_modern, expose)
    if expose is not None:
        out = _expose_names(out, expose)
    return out if prefix is None else _unprefix_error(out, prefix)


def _unprefix(key: str, value: str, prefix: str) -> str:
    if key in ("uri", "uriTemplate", "resourceUri", "ui/resourceUri"):
        return own_uri(value, prefix)
    return value.removeprefix(f"{prefix}/") if key == "logger" else value


def own_uri(exposed: str, prefix: str) -> str:
    """The server's own URI of one the hub exposes: `<prefix>+<uri>`, or `ui://<prefix>+<rest>` for an app's."""
    if exposed.startswith(f"ui://{prefix}+"):
        return "ui://" + exposed.removeprefix(f"ui://{prefix}+")
    return exposed.removeprefix(f"{prefix}+")


def _expose_names(out: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The names of a direct answer's listed tools and prompts, as the hub exposes them."""
    for listing in ("tools", "prompts"):
        items = out.get(listing)
        if isinstance(items, list):
            own = frozenset(i["name"] for i in items if isinstance(i, dict) and isinstance(i.get("name"), str))
            out[listing] = [
                {**i, "name": hub_name(listing, prefix, i["name"], own)}
                if isinstance(i, dict) and isinstance(i.get("name"), str)
                else i
                for i in items
            ]
    return out


def _unprefix_error(out: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A relayed error's message, without the `<prefix>: ` the hub puts before it."""
    error = out.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        out["error"] = {**error, "message": error["message"].removeprefix(f"{prefix}: ")}
    return out


def _decoded(value: Any) -> Any:
    """Blobs that hold UTF-8 text, decoded (one-to-one), so that `volatile` applies to what they say; and text that
    holds a JSON object, parsed (its members' order means nothing: a server's environment, say)."""
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _decoded(v) for k, v in value.items()}
    if isinstance(out.get("blob"), str):
        with contextlib.suppress(ValueError):
            out["blob"] = {"base64 of": base64.b64decode(out["blob"], validate=True).decode()}
    if isinstance(out.get("text"), str) and out["text"].startswith("{"):
        with contextlib.suppress(ValueError):
            out["text"] = {"JSON": json.loads(out["text"])}
    return out


def _without_session_resources(answer: Outcome, prefix: str) -> Outcome:
    listed = answer.get("result", {}).get("resources") if isinstance(answer, dict) else None
    if not isinstance(listed, list):
        return answer
    kept = [r for r in listed if prefix not in str(r.get("uri"))]
    return {**answer, "result": {**answer["result"], "resources": kept}}


def render(value: Any, volatile: list[tuple[str, str]]) -> str:
    value = _decoded(value)
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)
    for pattern, replacement in volatile:
        text = re.sub(pattern, replacement, text)
    return text


async def compare(bench: Bench, front: str, era: str, aspect: str) -> None:
    """Run one aspect directly, then through the hub, from the same state; fail with a diff of each step that
    differs."""
    spec = bench.spec
    direct, through = bench.sides["direct", era], bench.sides[front, era]
    if aspect == "tools":
        listed = {t["name"] for t in (await direct.list_all("tools/list"))["result"]["tools"]}
        called = {tool for tool, _ in spec.calls(bench.workspace)} | spec.feature_tools
        assert listed <= called, f"the script calls no {sorted(listed - called)}: add them to {spec.name}'s calls"
    answers = []
    for side in (direct, through):
        spec.reset(bench.workspace)
        for record in (side.host.notifications, side.host.logs, side.host.sampled, side.host.elicited):
            record.clear()
        with anyio.fail_after(WAIT):
            steps = await run_aspect(side, spec, aspect, direct.client.server_capabilities)
        prefix, expose = (None, spec.name) if side is direct else (spec.name, None)
        if spec.session_resources is not None:
            steps = [(name, _without_session_resources(a, spec.session_resources)) for name, a in steps]
        answers.append(
            [(name, render(normalise(a, prefix, direct.modern, expose), spec.volatile)) for name, a in steps]
        )
    expected, got = answers
    steps = [n for n, _ in expected], [n for n, _ in got]
    assert steps[0] == steps[1], f"the two runs took different steps: directly {steps[0]}, through the hub {steps[1]}"
    diffs = [
        f"--- {name}\n" + "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), "direct", front, lineterm=""))
        for (name, a), (_, b) in zip(expected, got, strict=True)
        if a != b
    ]
    assert not diffs, (
        f"{len(diffs)} of {len(expected)} answers differ ({spec.name}, {front}, {era}, {aspect}):\n"
        + ("\n".join(diffs)[:6000])
    )

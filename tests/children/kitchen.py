"""Kitchen-sink MCP child: one server exercising everything an aggregating hub must pass through.

Run from the repo root: `python -m tests.children.kitchen [--name NAME] [--tools a,b]`.
Serves both protocol eras (2025 handshake and 2026-07-28) over stdio by default; `--transport http|sse`
serves it over HTTP instead. See `_common.py` for the shared flags.

Tools: echo, add, fail, boom, image, audio, link, meta, progress, wait_for_cancel, log, add_tool, touch, sample,
elicit, roots, both, env, this.tool.has.dots, state (+ tools created by add_tool). Resources: kitchen://static/hello,
kitchen://static/blob; template kitchen://items/{id}. Prompts: greet(name), plain.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import warnings
import wave
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, get_args

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.children._common import EMPTY_OBJECT_SCHEMA, ChildServer, base_parser, run, text, text_result

Ctx = ServerRequestContext[Any]
ToolResult = types.CallToolResult | types.InputRequiredResult
ToolFn = Callable[["Kitchen", Ctx, dict[str, Any], types.CallToolRequestParams], Awaitable[ToolResult]]

# A valid 1x1 RGBA PNG (CRCs checked).
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _tiny_wav() -> str:
    """Base64 of a valid 4-frame, 8 kHz, 8-bit mono silent WAV (44-byte header + 4 bytes)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * 4)
    return base64.b64encode(buf.getvalue()).decode()


WAV_TINY = _tiny_wav()
BLOB_BYTES = bytes(range(16))
HELLO_URI = "kitchen://static/hello"
BLOB_URI = "kitchen://static/blob"
ITEM_TEMPLATE = "kitchen://items/{id}"
ITEM_RE = re.compile(r"^kitchen://items/(?P<id>[^/]+)$")
LOG_LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
GREET_NAMES = ["alice", "albert", "bob"]
ITEM_IDS = ["1", "2", "3"]


def _schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """An object inputSchema; every kitchen tool takes an object."""
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


STRING = {"type": "string"}


class BadArguments(Exception):
    """Arguments do not match the tool's inputSchema; reported as an isError result (SEP-1303)."""


def _arg(args: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """Fetch and type-check one argument (the low-level server does not validate against inputSchema)."""
    if key not in args:
        if default is ...:
            raise BadArguments(f"missing argument {key!r}")
        return default
    value = args[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # True is not a number
        raise BadArguments(f"argument {key!r} has the wrong type")
    return value


def _is_modern(ctx: Ctx) -> bool:
    """2026-07-28 connections have no server→client requests: use InputRequiredResult (MRTR) instead."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


@dataclass
class ToolSpec:
    """A built-in tool's listing and implementation, kept together so `--tools` can filter both."""

    tool: types.Tool
    fn: ToolFn


class Kitchen:
    """All per-process state. stdio serves one connection per process; over HTTP all sessions share it."""

    def __init__(self, name: str, only: set[str] | None) -> None:
        self.bus = InMemorySubscriptionBus()
        self.specs: dict[str, ToolSpec] = {spec.tool.name: spec for spec in _static_tools()}
        unknown = (only or set()) - set(self.specs)
        if unknown:
            raise SystemExit(f"--tools: unknown tool(s) {sorted(unknown)}; known: {sorted(self.specs)}")
        self.enabled: set[str] = set(self.specs) if only is None else only
        self.dynamic: dict[str, types.Tool] = {}
        self.subscriptions: set[str] = set()
        self.log_level: str | None = None
        self.roots_changed = 0
        self.server = ChildServer(
            name,
            version="1.0.0",
            title=f"Kitchen sink ({name})",
            instructions="Test child for the hub: every MCP feature in one server.",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=ListenHandler(self.bus),
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_completion=self.complete,
        )
        # add_request_handler, not on_set_logging_level=: the latter warns MCPDeprecationWarning.
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        self.server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self.on_roots_changed
        )

    # ---- tools ------------------------------------------------------------------------------------------

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [spec.tool for name, spec in self.specs.items() if name in self.enabled]
        return types.ListToolsResult(tools=tools + list(self.dynamic.values()))

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> ToolResult:
        args = params.arguments or {}
        if params.name in self.dynamic:
            return text_result(f"dynamic {params.name}")
        spec = self.specs.get(params.name)
        if spec is None or params.name not in self.enabled:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            return await spec.fn(self, ctx, args, params)
        except BadArguments as exc:
            return text_result(f"{params.name}: {exc}", is_error=True)

    async def notify_tools_changed(self, ctx: Ctx) -> None:
        """2025 peers get the connection notification; 2026 peers get it on their subscriptions/listen stream."""
        await ctx.session.send_tool_list_changed()
        await self.bus.publish(ToolsListChanged())

    # ---- resources --------------------------------------------------------------------------------------

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=HELLO_URI, name="hello", title="Hello", description="Static text", mime_type="text/plain"
                ),
                types.Resource(
                    uri=BLOB_URI,
                    name="blob",
                    title="Blob",
                    description="Static bytes 0..15",
                    mime_type="application/octet-stream",
                    size=len(BLOB_BYTES),
                ),
            ]
        )

    async def list_resource_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=ITEM_TEMPLATE,
                    name="item",
                    title="Item",
                    description="Reads as 'item {id}'",
                    mime_type="text/plain",
                )
            ]
        )

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = params.uri
        if uri == HELLO_URI:
            contents: types.TextResourceContents | types.BlobResourceContents = types.TextResourceContents(
                uri=uri, mime_type="text/plain", text="hello world"
            )
        elif uri == BLOB_URI:
            contents = types.BlobResourceContents(
                uri=uri, mime_type="application/octet-stream", blob=base64.b64encode(BLOB_BYTES).decode()
            )
        elif match := ITEM_RE.match(uri):
            contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"item {match['id']}")
        else:
            # 2026-07-28 uses INVALID_PARAMS for unknown resources (-32002 is retired).
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}", data={"uri": uri})
        return types.ReadResourceResult(contents=[contents])

    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscriptions.add(params.uri)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscriptions.discard(params.uri)
        return types.EmptyResult()

    # ---- prompts ----------------------------------------------------------------------------------------

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name="greet",
                    title="Greet",
                    description="Greets someone by name",
                    arguments=[types.PromptArgument(name="name", description="Who to greet", required=True)],
                ),
                types.Prompt(name="plain", title="Plain", description="A prompt without arguments"),
            ]
        )

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        arguments = params.arguments or {}
        if params.name == "greet":
            if "name" not in arguments:
                raise MCPError(code=types.INVALID_PARAMS, message="greet: missing required argument 'name'")
            return types.GetPromptResult(
                description="A greeting",
                messages=[types.PromptMessage(role="user", content=text(f"Hello, {arguments['name']}!"))],
            )
        if params.name == "plain":
            return types.GetPromptResult(
                description="A plain prompt",
                messages=[types.PromptMessage(role="assistant", content=text("plain prompt"))],
            )
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")

    # ---- completion, logging ----------------------------------------------------------------------------

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref, arg = params.ref, params.argument
        pool: list[str] = []
        if isinstance(ref, types.PromptReference) and ref.name == "greet" and arg.name == "name":
            pool = GREET_NAMES
        elif isinstance(ref, types.ResourceTemplateReference) and ref.uri == ITEM_TEMPLATE and arg.name == "id":
            pool = ITEM_IDS
        values = [v for v in pool if v.startswith(arg.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def on_roots_changed(self, ctx: Ctx, params: types.NotificationParams | None) -> None:
        self.roots_changed += 1

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.log_level = params.level
        return types.EmptyResult()


# ---- tool implementations -------------------------------------------------------------------------------


async def t_echo(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return text_result(_arg(args, "text", str))


async def t_add(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    total = _arg(args, "a", (int, float)) + _arg(args, "b", (int, float))
    structured = {"sum": total}
    return types.CallToolResult(content=[text(json.dumps(structured))], structured_content=structured)


async def t_fail(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return text_result("kitchen failed on purpose", is_error=True)


async def t_boom(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    raise MCPError(code=types.INTERNAL_ERROR, message="boom exploded", data={"why": "test"})


async def t_image(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(content=[types.ImageContent(data=PNG_1X1, mime_type="image/png")])


async def t_audio(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(content=[types.AudioContent(data=WAV_TINY, mime_type="audio/wav")])


async def t_link(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(
        content=[
            types.ResourceLink(uri=HELLO_URI, name="hello", mime_type="text/plain"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri=HELLO_URI, mime_type="text/plain", text="hello world")
            ),
        ]
    )


async def t_meta(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(content=[text("meta")], _meta={"com.example/trace": "abc123"})


async def t_progress(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    steps = _arg(args, "steps", int)
    delay = _arg(args, "delay", (int, float), 0)
    for i in range(1, steps + 1):
        # A no-op unless the caller sent a progressToken.
        await ctx.session.report_progress(i, steps, f"step {i}")
        if delay:
            await anyio.sleep(delay)
    return text_result(f"done {steps}")


async def t_wait_for_cancel(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    marker = _arg(args, "marker", str)
    seconds = _arg(args, "seconds", (int, float), 30)
    release = args.get("release")
    await anyio.Path(f"{marker}.started").write_text("started")
    try:
        with anyio.move_on_after(seconds):
            while isinstance(release, str):  # the test creates the file when the call may end
                if await anyio.Path(release).exists():
                    return text_result("released")
                await anyio.sleep(0.02)
            await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        # Shielded: an unshielded await inside the cancelled scope would be cancelled at once.
        with anyio.CancelScope(shield=True):
            await anyio.Path(marker).write_text("cancelled")
        raise
    return text_result("not cancelled")


async def t_log(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    level = _arg(args, "level", str)
    if level not in LOG_LEVELS:
        raise BadArguments(f"level must be one of {', '.join(LOG_LEVELS)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.session.send_log_message(
            level,  # checked against LOG_LEVELS above
            _arg(args, "message", str),
            logger="kitchen",
            related_request_id=ctx.request_id,
        )
    return text_result("logged")


async def t_add_tool(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    name = _arg(args, "name", str)
    if name in k.specs:
        return text_result(f"add_tool: {name!r} is a built-in tool", is_error=True)
    k.dynamic[name] = types.Tool(
        name=name,
        title=f"Dynamic {name}",
        description=f"Added at runtime by add_tool; returns 'dynamic {name}'.",
        input_schema=EMPTY_OBJECT_SCHEMA,
    )
    await k.notify_tools_changed(ctx)
    return text_result("added")


async def t_touch(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    uri = _arg(args, "uri", str)
    await ctx.session.send_resource_updated(uri)  # 2025 peers (dropped on 2026 connections)
    await k.bus.publish(ResourceUpdated(uri))  # 2026 peers listening with resource_subscriptions
    return text_result("touched")


async def t_sample(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    prompt = _arg(args, "prompt", str)
    messages = [types.SamplingMessage(role="user", content=text(prompt))]
    answer: Any
    if _is_modern(ctx):
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=messages, max_tokens=50))
        answer = _input_response(p, "sample", request)
        if isinstance(answer, types.InputRequiredResult):
            return answer
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            answer = await ctx.session.create_message(messages, max_tokens=50, related_request_id=ctx.request_id)
    if not isinstance(answer, types.CreateMessageResult | types.CreateMessageResultWithTools):
        raise MCPError(code=types.INVALID_PARAMS, message="sample: input response is not a CreateMessageResult")
    content = answer.content
    block = content[0] if isinstance(content, list) and content else content
    return text_result(block.text if isinstance(block, types.TextContent) else f"<{getattr(block, 'type', '?')}>")


async def t_elicit(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    message = _arg(args, "message", str)
    schema: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer: Any
    if _is_modern(ctx):
        request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
        answer = _input_response(p, "elicit", request)
        if isinstance(answer, types.InputRequiredResult):
            return answer
    else:
        answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    if not isinstance(answer, types.ElicitResult):
        raise MCPError(code=types.INVALID_PARAMS, message="elicit: input response is not an ElicitResult")
    return text_result(f"{answer.action}:{answer.content}")


async def t_roots(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    answer: Any
    if _is_modern(ctx):
        answer = _input_response(p, "roots", types.ListRootsRequest())
        if isinstance(answer, types.InputRequiredResult):
            return answer
    else:
        # Not ctx.session.list_roots(): it has no related_request_id, so on HTTP it would ride the standalone
        # GET stream instead of this call's stream (mcp/server/session.py list_roots). Also not deprecated.
        answer = await ctx.session.send_request(
            types.ListRootsRequest(),
            types.ListRootsResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    if not isinstance(answer, types.ListRootsResult):
        raise MCPError(code=types.INVALID_PARAMS, message="roots: input response is not a ListRootsResult")
    return text_result(",".join(str(root.uri) for root in answer.roots))


async def t_both(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    """Sampling and elicitation at the same time; returns 'SAMPLED|ACTION:CONTENT'."""
    prompt, message = _arg(args, "prompt", str), _arg(args, "message", str)
    messages = [types.SamplingMessage(role="user", content=text(prompt))]
    schema: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answers: dict[str, Any] = {}
    if _is_modern(ctx):
        asks: dict[str, types.InputRequest] = {
            "sample": types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=messages, max_tokens=50)
            ),
            "elicit": types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
            ),
        }
        given = p.input_responses or {}
        missing = {key: request for key, request in asks.items() if key not in given}
        if missing:
            return types.InputRequiredResult(input_requests=missing)
        answers = dict(given)
    else:

        async def sample() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                answers["sample"] = await ctx.session.create_message(
                    messages, max_tokens=50, related_request_id=ctx.request_id
                )

        async def elicit() -> None:
            answers["elicit"] = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            tg.start_soon(elicit)
    sampled, elicited = answers["sample"], answers["elicit"]
    if not isinstance(sampled, types.CreateMessageResult | types.CreateMessageResultWithTools) or not isinstance(
        elicited, types.ElicitResult
    ):
        raise MCPError(code=types.INVALID_PARAMS, message="both: input responses of the wrong kind")
    block = sampled.content[0] if isinstance(sampled.content, list) else sampled.content
    said = block.text if isinstance(block, types.TextContent) else "?"
    return text_result(f"{said}|{elicited.action}:{json.dumps(elicited.content, sort_keys=True)}")


def _input_response(
    params: types.CallToolRequestParams, key: str, request: types.InputRequest
) -> types.InputResponse | types.InputRequiredResult:
    """2026-07-28 (MRTR): the client's answer under `key` if it retried with one, else ask for it."""
    if params.input_responses and key in params.input_responses:
        return params.input_responses[key]
    return types.InputRequiredResult(input_requests={key: request})


async def t_env(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return text_result(os.environ.get(_arg(args, "name", str), "<unset>"))


async def t_dots(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    return text_result("dots")


async def t_state(k: Kitchen, ctx: Ctx, args: dict[str, Any], p: types.CallToolRequestParams) -> ToolResult:
    state = {
        "log_level": k.log_level,
        "subscriptions": sorted(k.subscriptions),
        "dynamic_tools": sorted(k.dynamic),
        "roots_changed": k.roots_changed,
        "protocol_version": ctx.protocol_version,
    }
    return types.CallToolResult(content=[text(json.dumps(state, sort_keys=True))], structured_content=state)


def _tool(name: str, title: str, description: str, schema: dict[str, Any], fn: ToolFn, **extra: Any) -> ToolSpec:
    return ToolSpec(types.Tool(name=name, title=title, description=description, input_schema=schema, **extra), fn)


def _static_tools() -> list[ToolSpec]:
    """The built-in tools, in listing order."""
    number = {"type": "number"}
    return [
        _tool("echo", "Echo", "Returns its text argument.", _schema({"text": STRING}, ["text"]), t_echo),
        _tool(
            "add",
            "Add",
            "Adds two numbers; structured output {sum}.",
            _schema({"a": number, "b": number}, ["a", "b"]),
            t_add,
            output_schema={"type": "object", "properties": {"sum": number}, "required": ["sum"]},
            annotations=types.ToolAnnotations(read_only_hint=True),
            icons=[types.Icon(src="https://example.com/add.png", mime_type="image/png")],
            _meta={"com.example/kind": "math"},
        ),
        _tool("fail", "Fail", "Returns an isError result.", _schema({}), t_fail),
        _tool("boom", "Boom", "Fails with JSON-RPC error -32603 'boom exploded'.", _schema({}), t_boom),
        _tool("image", "Image", "Returns a 1x1 PNG image block.", _schema({}), t_image),
        _tool("audio", "Audio", "Returns a tiny WAV audio block.", _schema({}), t_audio),
        _tool("link", "Link", "Returns a resource_link and an embedded resource.", _schema({}), t_link),
        _tool("meta", "Meta", "Returns a result with a vendor _meta key.", _schema({}), t_meta),
        _tool(
            "progress",
            "Progress",
            "Reports `steps` progress notifications, then returns 'done {steps}'.",
            _schema({"steps": {"type": "integer", "minimum": 0}, "delay": {"type": "number", "minimum": 0}}, ["steps"]),
            t_progress,
        ),
        _tool(
            "wait_for_cancel",
            "Wait for cancel",
            "Writes MARKER.started, sleeps (or returns 'released' once RELEASE exists); writes MARKER='cancelled' if "
            "cancelled.",
            _schema({"marker": STRING, "seconds": {"type": "number", "minimum": 0}, "release": STRING}, ["marker"]),
            t_wait_for_cancel,
        ),
        _tool(
            "log",
            "Log",
            "Sends a notifications/message log entry to the client.",
            _schema({"level": {"type": "string", "enum": list(LOG_LEVELS)}, "message": STRING}, ["level", "message"]),
            t_log,
        ),
        _tool(
            "add_tool",
            "Add tool",
            "Adds a tool at runtime and sends tools/list_changed.",
            _schema({"name": STRING}, ["name"]),
            t_add_tool,
        ),
        _tool(
            "touch",
            "Touch",
            "Sends notifications/resources/updated for uri.",
            _schema({"uri": STRING}, ["uri"]),
            t_touch,
        ),
        _tool(
            "sample",
            "Sample",
            "Asks the client to sample (sampling/createMessage).",
            _schema({"prompt": STRING}, ["prompt"]),
            t_sample,
        ),
        _tool(
            "elicit",
            "Elicit",
            "Asks the client for a form (elicitation/create).",
            _schema({"message": STRING}, ["message"]),
            t_elicit,
        ),
        _tool("roots", "Roots", "Lists the client's roots, comma-separated.", _schema({}), t_roots),
        _tool(
            "both",
            "Both",
            "Asks the client for sampling and elicitation at the same time; returns 'SAMPLED|ACTION:CONTENT'.",
            _schema({"prompt": STRING, "message": STRING}, ["prompt", "message"]),
            t_both,
        ),
        _tool(
            "env",
            "Env",
            "Returns an environment variable of the child, or <unset>.",
            _schema({"name": STRING}, ["name"]),
            t_env,
        ),
        _tool(
            "this.tool.has.dots", "Dotted name", "A tool whose name contains dots; returns 'dots'.", _schema({}), t_dots
        ),
        _tool(
            "state",
            "State",
            "Returns the child's state: log level, subscriptions, dynamic tools.",
            _schema({}),
            t_state,
        ),
    ]


def main() -> None:
    parser = base_parser("Kitchen-sink MCP child for hub tests.", "kitchen")
    parser.add_argument("--tools", default=None, help="comma-separated subset of the built-in tools to list")
    args = parser.parse_args()
    only = {t.strip() for t in args.tools.split(",") if t.strip()} if args.tools else None
    run(Kitchen(args.name, only).server, args)


if __name__ == "__main__":
    main()

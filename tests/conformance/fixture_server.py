"""MCP server exposing every fixture the official conformance suite's server scenarios need.

The fixtures (tool, resource and prompt names, texts, schemas) follow the scenario sources of
npm ``@modelcontextprotocol/conformance`` 0.1.16 (``dist/index.js``), which fix the names a
server under test must expose. Built on the low-level ``mcp.server.Server`` of SDK 2.3.

Run it:

    python -m tests.conformance.fixture_server                       # stdio (default)
    python -m tests.conformance.fixture_server --http 127.0.0.1:PORT # Streamable HTTP at /mcp

Over HTTP it serves stateful sessions with SSE responses and DNS-rebinding protection for
loopback hosts. ``--event-store`` adds an in-memory event store (SSE priming events,
resumability, ``test_reconnection`` stream closing). Logs go to stderr only.

Sampling and elicitation use server->client requests, so they work on the handshake protocol
era (2025-xx) only; on a 2026-07-28 connection those tools answer ``isError: true``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError

logger = logging.getLogger("conformance-fixture")

SERVER_NAME = "mcp-conformance-fixture-server"
SERVER_VERSION = "1.0.0"

# 1x1 red PNG and a minimal WAV (the same shapes the suite's docs ask for).
TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# The fixture's tool/resource/prompt lists never change at runtime, so the honest advertisement
# is listChanged: false everywhere. It is applied through `create_initialization_options` so that
# stdio and Streamable HTTP (whose session manager calls `create_initialization_options()` with no
# arguments) advertise exactly the same capabilities.
FIXTURE_NOTIFICATION_OPTIONS = NotificationOptions(prompts_changed=False, resources_changed=False, tools_changed=False)

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# SEP-1613 (scenario `json-schema-2020-12`, pending in 0.1.16): must reach the client verbatim.
JSON_SCHEMA_2020_12_INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

# scenario `elicitation-sep1034-defaults`
SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

# scenario `elicitation-sep1330-enums`: the five enum shapes.
SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}

# scenario `tools-call-elicitation`
ELICITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


def _tool(name: str, description: str, input_schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=input_schema or dict(EMPTY_OBJECT_SCHEMA))


TOOLS: list[types.Tool] = [
    _tool("test_simple_text", "Tests simple text content response"),
    _tool("test_image_content", "Tests image content response"),
    _tool("test_audio_content", "Tests audio content response"),
    _tool("test_embedded_resource", "Tests embedded resource content response"),
    _tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
    _tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    _tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
    _tool("test_error_handling", "Tests error response handling"),
    _tool(
        "test_sampling",
        "Tests server-initiated sampling (LLM completion request)",
        {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"],
        },
    ),
    _tool(
        "test_elicitation",
        "Tests server-initiated elicitation (user input request)",
        {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"],
        },
    ),
    _tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034"),
    _tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330"),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        JSON_SCHEMA_2020_12_INPUT_SCHEMA,
    ),
    _tool(
        "test_reconnection",
        "Tests SSE stream disconnection and client reconnection (SEP-1699): closes the POST SSE stream "
        "mid-call when the server runs with an event store",
    ),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}

STATIC_TEXT = "This is the content of the static text resource."
WATCHED_TEXT = "Watched resource content"

RESOURCES: list[types.Resource] = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        title="Static Text Resource",
        description="A static text resource for testing",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        title="Static Binary Resource",
        description="A static binary resource (image) for testing",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        title="Watched Resource",
        description="A resource clients may subscribe to",
        mime_type="text/plain",
    ),
]

TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"
RESOURCE_TEMPLATES: list[types.ResourceTemplate] = [
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
]

PROMPTS: list[types.Prompt] = [
    types.Prompt(
        name="test_simple_prompt", title="Simple Test Prompt", description="A simple prompt without arguments"
    ),
    types.Prompt(
        name="test_prompt_with_arguments",
        title="Prompt With Arguments",
        description="A prompt with required arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        title="Prompt With Embedded Resource",
        description="A prompt that includes an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    types.Prompt(
        name="test_prompt_with_image",
        title="Prompt With Image",
        description="A prompt that includes image content",
    ),
]
PROMPTS_BY_NAME = {p.name: p for p in PROMPTS}

# Completion candidates (`completion-complete` only checks the shape; these make it useful).
COMPLETIONS: dict[tuple[str, str, str], list[str]] = {
    ("ref/prompt", "test_prompt_with_arguments", "arg1"): ["paris", "park", "party", "test", "testValue1"],
    ("ref/prompt", "test_prompt_with_arguments", "arg2"): ["testValue2", "value2", "world"],
    ("ref/prompt", "test_prompt_with_embedded_resource", "resourceUri"): [
        "test://example-resource",
        "test://static-text",
        "test://static-binary",
    ],
    ("ref/resource", "test://template/{id}/data", "id"): ["1", "123", "42"],
}

LOG_LEVELS: list[str] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

_T = TypeVar("_T")


def _quietly(make: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> Awaitable[_T]:
    """Call a deprecated (MCPDeprecationWarning) session helper without the warning.

    `typing_extensions.deprecated` warns when the coroutine function is *called*, so only the
    call is wrapped; the returned coroutine is awaited outside `catch_warnings` (which is not
    task-safe across awaits).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return make(*args, **kwargs)


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(text)], is_error=True)


class FixtureServer(Server[dict[str, Any]]):
    """Low-level server with every conformance fixture registered."""

    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME,
            version=SERVER_VERSION,
            instructions="Fixture server for the MCP conformance suite.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
        )
        # add_request_handler avoids the MCPDeprecationWarning of on_set_logging_level=.
        self.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        # Per connection: key = Mcp-Session-Id header over HTTP, None over stdio (one connection).
        self._log_levels: dict[str | None, str] = {}
        self._subscriptions: dict[str | None, set[str]] = {}

    # -- capabilities ------------------------------------------------------------------------

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or FIXTURE_NOTIFICATION_OPTIONS, experimental_capabilities, extensions
        )

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _conn_key(ctx: ServerRequestContext[Any]) -> str | None:
        request = ctx.request
        headers = getattr(request, "headers", None)
        if headers is None:
            return None
        session_id: str | None = headers.get("mcp-session-id")
        return session_id

    async def _log(self, ctx: ServerRequestContext[Any], level: types.LoggingLevel, data: Any) -> None:
        threshold = self._log_levels.get(self._conn_key(ctx))
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        await _quietly(
            ctx.session.send_log_message, level, data, "conformance-fixture", related_request_id=ctx.request_id
        )

    # -- logging / completion ----------------------------------------------------------------

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self._log_levels[self._conn_key(ctx)] = params.level
        logger.info("log level set to %s", params.level)
        return types.EmptyResult()

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            key = ("ref/prompt", ref.name, params.argument.name)
        else:
            key = ("ref/resource", ref.uri, params.argument.name)
        prefix = params.argument.value or ""
        values = [v for v in COMPLETIONS.get(key, []) if v.startswith(prefix)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    # -- tools -------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def _call_tool(  # noqa: C901 - one branch per fixture tool
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        args = params.arguments or {}
        if name not in TOOLS_BY_NAME:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")

        if name == "test_simple_text":
            return types.CallToolResult(content=[_text("This is a simple text response for testing.")])
        if name == "test_image_content":
            return types.CallToolResult(
                content=[types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")]
            )
        if name == "test_audio_content":
            return types.CallToolResult(
                content=[types.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mime_type="audio/wav")]
            )
        if name == "test_embedded_resource":
            return types.CallToolResult(
                content=[
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="test://embedded-resource",
                            mime_type="text/plain",
                            text="This is an embedded resource content.",
                        ),
                    )
                ]
            )
        if name == "test_multiple_content_types":
            return types.CallToolResult(
                content=[
                    _text("Multiple content types test:"),
                    types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png"),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="test://mixed-content-resource",
                            mime_type="application/json",
                            text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                        ),
                    ),
                ]
            )
        if name == "test_tool_with_logging":
            await self._log(ctx, "info", "Tool execution started")
            await anyio.sleep(0.05)
            await self._log(ctx, "info", "Tool processing data")
            await anyio.sleep(0.05)
            await self._log(ctx, "info", "Tool execution completed")
            return types.CallToolResult(content=[_text("Tool with logging executed successfully")])
        if name == "test_tool_with_progress":
            # report_progress is a no-op when the request carried no progressToken.
            for step in (0, 50, 100):
                await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
                if step < 100:
                    await anyio.sleep(0.05)
            token = ctx.meta.get("progress_token") if ctx.meta else None
            return types.CallToolResult(content=[_text(f"Progress tool completed (progressToken={token})")])
        if name == "test_error_handling":
            return _error_result("This tool intentionally returns an error for testing")
        if name == "test_sampling":
            return await self._sampling(ctx, str(args.get("prompt", "")))
        if name == "test_elicitation":
            return await self._elicit(ctx, str(args.get("message", "")), ELICITATION_SCHEMA, "User response")
        if name == "test_elicitation_sep1034_defaults":
            return await self._elicit(
                ctx,
                "Please review and update the form fields with defaults",
                SEP1034_SCHEMA,
                "Elicitation completed",
            )
        if name == "test_elicitation_sep1330_enums":
            return await self._elicit(
                ctx, "Please select options from the enum fields", SEP1330_SCHEMA, "Elicitation completed"
            )
        if name == "json_schema_2020_12_tool":
            return types.CallToolResult(
                content=[_text(f"JSON Schema 2020-12 tool called with: {json.dumps(args, sort_keys=True)}")]
            )
        if name == "test_reconnection":
            # Only set when the server has an event store and the request is >= 2025-11-25.
            if ctx.close_sse_stream is not None:
                await ctx.close_sse_stream()
            await anyio.sleep(0.1)
            return types.CallToolResult(
                content=[
                    _text(
                        "Reconnection test completed successfully. If you received this, the client "
                        "properly reconnected after stream closure."
                    )
                ]
            )
        raise AssertionError(f"unhandled fixture tool {name}")  # pragma: no cover

    async def _sampling(self, ctx: ServerRequestContext[Any], prompt: str) -> types.CallToolResult:
        if not ctx.session.check_client_capability(types.ClientCapabilities(sampling=types.SamplingCapability())):
            return _error_result("Client does not support sampling")
        try:
            result: types.CreateMessageResult = await _quietly(
                ctx.session.create_message,
                messages=[types.SamplingMessage(role="user", content=_text(prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        except NoBackChannelError as exc:
            return _error_result(f"Sampling needs a handshake-era connection: {exc}")
        except MCPError as exc:
            return _error_result(f"Sampling failed: {exc}")
        content = result.content
        text = (
            content.text
            if isinstance(content, types.TextContent)
            else json.dumps(content.model_dump(by_alias=True, mode="json", exclude_none=True))
        )
        return types.CallToolResult(content=[_text(f"LLM response: {text}")])

    async def _elicit(
        self, ctx: ServerRequestContext[Any], message: str, schema: dict[str, Any], label: str
    ) -> types.CallToolResult:
        if not ctx.session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
            return _error_result("Client does not support elicitation")
        try:
            result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except NoBackChannelError as exc:
            return _error_result(f"Elicitation needs a handshake-era connection: {exc}")
        except MCPError as exc:
            return _error_result(f"Elicitation failed: {exc}")
        content = json.dumps(result.content or {}, sort_keys=True)
        return types.CallToolResult(content=[_text(f"{label}: action={result.action}, content={content}")])

    # -- resources ---------------------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=RESOURCE_TEMPLATES)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == "test://static-text":
            contents: list[types.TextResourceContents | types.BlobResourceContents] = [
                types.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)
            ]
        elif uri == "test://static-binary":
            contents = [types.BlobResourceContents(uri=uri, mime_type="image/png", blob=TEST_IMAGE_BASE64)]
        elif uri == "test://watched-resource":
            contents = [types.TextResourceContents(uri=uri, mime_type="text/plain", text=WATCHED_TEXT)]
        elif (
            uri.startswith(TEMPLATE_PREFIX)
            and uri.endswith(TEMPLATE_SUFFIX)
            and "/" not in (ident := uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)])
            and ident
        ):
            body = json.dumps(
                {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}, separators=(",", ":")
            )
            contents = [types.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
        else:
            # -32602 + data.uri (2026-07-28 convention; 2025 specs used -32002, retired since).
            raise MCPError(code=types.INVALID_PARAMS, message=f"Resource not found: {uri}", data={"uri": uri})
        return types.ReadResourceResult(contents=contents)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self._subscriptions.setdefault(self._conn_key(ctx), set()).add(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._subscriptions.get(self._conn_key(ctx), set()).discard(str(params.uri))
        return types.EmptyResult()

    # -- prompts -----------------------------------------------------------------------------

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        name = params.name
        args = params.arguments or {}
        prompt = PROMPTS_BY_NAME.get(name)
        if prompt is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in args]
        if missing:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Missing required arguments: {', '.join(missing)}")

        if name == "test_simple_prompt":
            messages = [types.PromptMessage(role="user", content=_text("This is a simple prompt for testing."))]
        elif name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"
            messages = [types.PromptMessage(role="user", content=_text(text))]
        elif name == "test_prompt_with_embedded_resource":
            messages = [
                types.PromptMessage(
                    role="user",
                    content=types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri=args["resourceUri"],
                            mime_type="text/plain",
                            text="Embedded resource content for testing.",
                        ),
                    ),
                ),
                types.PromptMessage(role="user", content=_text("Please process the embedded resource above.")),
            ]
        else:  # test_prompt_with_image
            messages = [
                types.PromptMessage(
                    role="user", content=types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")
                ),
                types.PromptMessage(role="user", content=_text("Please analyze the image above.")),
            ]
        return types.GetPromptResult(description=prompt.description, messages=messages)


class InMemoryEventStore(EventStore):
    """Minimal event store (resumability, SSE priming events). Unbounded: for tests only."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []  # (event_id, stream_id, msg)
        self._counter = 0

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        self._counter += 1
        event_id = f"{self._counter}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, e in enumerate(self._events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for event_id, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def _parse_hostport(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


async def serve_stdio(server: FixtureServer) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: FixtureServer, host: str, port: int, *, event_store: bool) -> None:
    import uvicorn

    loopback = host in ("127.0.0.1", "localhost", "::1")
    security = None
    if not loopback:
        # Not loopback: allow exactly the served authority (the SDK only auto-protects loopback).
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[authority],
            allowed_origins=[f"http://{authority}"],
        )
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=False,
        json_response=False,
        event_store=InMemoryEventStore() if event_store else None,
        retry_interval=1000 if event_store else None,
        transport_security=security,
        host=host,
    )
    # access_log=False: uvicorn's access logger writes to stdout.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    await uvicorn.Server(config).serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.fixture_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--http", metavar="HOST:PORT", type=_parse_hostport, help="serve Streamable HTTP at /mcp")
    parser.add_argument(
        "--event-store", action="store_true", help="HTTP only: in-memory event store (priming events, resumability)"
    )
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")
    args = parser.parse_args(argv)

    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    server = FixtureServer()
    if args.http:
        host, port = args.http
        logger.warning("fixture server: Streamable HTTP on http://%s:%d/mcp", host, port)
        anyio.run(lambda: serve_http(server, host, port, event_store=args.event_store))
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()

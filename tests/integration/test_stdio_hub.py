"""The hub as a host sees it: a real `hub serve` subprocess over stdio, several real children at once.

Children: our kitchen-sink server (every content type and notification), a paginating server, two unprefixed
servers that collide, a filtered one, a broken one, `mcp-server-time` (PyPI) and the reference
`@modelcontextprotocol/server-everything` (npm, pinned). Pass-through is checked against a direct
connection to the same child.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from tests.support.children import everything_server, python_child, write_config
from tests.support.logs import wait_for_log
from tests.support.mcp_client import Host, connect_direct, connect_hub, hub_params, wait_for_tools
from tests.support.waits import wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAW: Any = TypeAdapter(dict[str, Any])
KITCHEN = python_child("tests.children.kitchen", env={"KITCHEN_SECRET": "s3cret"})
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def servers() -> dict[str, Any]:
    return {
        "kitchen": KITCHEN,
        "paged": python_child("tests.children.paged"),
        "time": TIME,
        "everything": everything_server(),
        "locked": {**python_child("tests.children.kitchen"), "tools": {"allow": ["echo", "add*"], "deny": ["add"]}},
        "solo": {**python_child("tests.children.kitchen", "--tools", "echo"), "prefix": ""},
        "twin": {**python_child("tests.children.twin"), "prefix": ""},
        "broken": {"command": "/nonexistent/mcp-server", "max_restarts": 0},
    }


EXPECTED = {"kitchen_echo", "paged_p5", "time_convert_time", "everything_echo", "locked_echo", "echo"}


class Session:
    def __init__(self, client: Client, host: Host, log_file: Path, tmp: Path) -> None:
        self.client, self.host, self.log_file, self.tmp = client, host, log_file, tmp

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments or {}))
        result: dict[str, Any] = await self.client.session.send_request(request, RAW)
        return result

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_file.read_text().splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
async def hub(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    tmp = tmp_path_factory.mktemp("hub")
    config = write_config(tmp, servers())
    log_file = tmp / "hub.log"
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "HUB_TEST_LEAK": "must-not-reach"}
    host = Host()
    async with connect_hub(hub_params(config, log_file, "--log-level", "debug", env=env), host) as client:
        await wait_for_tools(client, host, EXPECTED)
        yield Session(client, host, log_file, tmp)


async def direct_call(server: dict[str, Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with connect_direct(server) as client:
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        result: dict[str, Any] = await client.session.send_request(request, RAW)
        return result


# ---- listings ---------------------------------------------------------------------------------------------


async def test_listing_merges_every_child_under_its_prefix(hub: Session) -> None:
    names = {t.name for t in (await hub.client.list_tools()).tools}
    assert {"kitchen_echo", "kitchen_add", "time_get_current_time", "everything_get-sum", "hub_health"} <= names
    assert {f"paged_p{i}" for i in range(1, 6)} <= names, "every page of a paginated child is read"
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)
    prompts = {p.name for p in (await hub.client.list_prompts()).prompts}
    assert {"kitchen_greet", "kitchen_plain", "everything_simple-prompt"} <= prompts
    resources = {r.uri for r in (await hub.client.list_resources()).resources}
    assert {"kitchen+kitchen://static/hello", "paged+paged://r/3"} <= resources
    templates = {t.uri_template for t in (await hub.client.list_resource_templates()).resource_templates}
    assert "kitchen+kitchen://items/{id}" in templates


async def test_listing_keeps_every_field_of_the_childs_tool(hub: Session) -> None:
    async with connect_direct(KITCHEN) as direct:
        original = next(t for t in (await direct.list_tools()).tools if t.name == "add")
    exposed = next(t for t in (await hub.client.list_tools()).tools if t.name == "kitchen_add")
    assert exposed.model_dump(exclude={"name"}) == original.model_dump(exclude={"name"})
    assert exposed.output_schema and exposed.annotations and exposed.icons and exposed.meta


async def test_tool_with_unfit_name_is_renamed_to_fit_and_still_routes(hub: Session) -> None:
    names = {t.name for t in (await hub.client.list_tools()).tools}
    assert "kitchen_this-tool-has-dots" in names
    result = await hub.call("kitchen_this-tool-has-dots")
    assert result["content"][0]["text"] == "dots"


# ---- pass-through -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("echo", {"text": "héllo"}),
        ("add", {"a": 2, "b": 3.5}),
        ("fail", {}),
        ("image", {}),
        ("audio", {}),
        ("meta", {}),
    ],
)
async def test_kitchen_results_pass_through_unchanged(hub: Session, tool: str, arguments: dict[str, Any]) -> None:
    assert await hub.call(f"kitchen_{tool}", arguments) == await direct_call(KITCHEN, tool, arguments)


async def test_structured_output_and_is_error_arrive_as_the_child_sent_them(hub: Session) -> None:
    added = await hub.call("kitchen_add", {"a": 1, "b": 2})
    assert added["structuredContent"] == {"sum": 3}
    failed = await hub.call("kitchen_fail")
    assert failed["isError"] is True and "on purpose" in failed["content"][0]["text"]
    meta = await hub.call("kitchen_meta")
    assert meta["_meta"]["com.example/trace"] == "abc123"


async def test_uris_in_results_are_renamed_and_readable_through_the_hub(hub: Session) -> None:
    direct = await direct_call(KITCHEN, "link", {})
    via_hub = await hub.call("kitchen_link")
    link, embedded = via_hub["content"]
    assert link["uri"] == "kitchen+" + direct["content"][0]["uri"]
    assert embedded["resource"]["uri"] == "kitchen+" + direct["content"][1]["resource"]["uri"]
    read = await hub.client.read_resource(link["uri"])
    assert read.contents[0].uri == link["uri"]
    assert isinstance(read.contents[0], types.TextResourceContents) and read.contents[0].text == "hello world"


async def test_third_party_children_answer_as_they_do_directly(hub: Session) -> None:
    arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    assert await hub.call("time_convert_time", arguments) == await direct_call(TIME, "convert_time", arguments)
    everything = everything_server()
    for tool, args in (
        ("get-sum", {"a": 2, "b": 40}),
        ("get-tiny-image", {}),
        ("echo", {"message": "hi"}),
        ("get-structured-content", {"location": "New York"}),
    ):
        assert await hub.call(f"everything_{tool}", args) == await direct_call(everything, tool, args), tool


async def test_resources_templates_and_blobs_are_read_through_the_hub(hub: Session) -> None:
    blob = (await hub.client.read_resource("kitchen+kitchen://static/blob")).contents[0]
    assert isinstance(blob, types.BlobResourceContents) and blob.uri == "kitchen+kitchen://static/blob"
    item = (await hub.client.read_resource("kitchen+kitchen://items/7")).contents[0]
    assert isinstance(item, types.TextResourceContents) and item.text == "item 7"
    doc = (await hub.client.read_resource("everything+demo://resource/dynamic/text/1")).contents[0]
    assert doc.uri == "everything+demo://resource/dynamic/text/1"


async def test_prompts_and_completion_route_to_the_owner(hub: Session) -> None:
    prompt = await hub.client.get_prompt("kitchen_greet", {"name": "Ada"})
    assert isinstance(prompt.messages[0].content, types.TextContent)
    assert prompt.messages[0].content.text == "Hello, Ada!"
    done = await hub.client.complete(
        types.PromptReference(type="ref/prompt", name="kitchen_greet"), {"name": "name", "value": "al"}
    )
    assert done.completion.values == ["alice", "albert"]
    done = await hub.client.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="kitchen+kitchen://items/{id}"),
        {"name": "id", "value": "2"},
    )
    assert done.completion.values == ["2"]


# ---- errors -------------------------------------------------------------------------------------------------


async def test_unknown_names_are_errors_that_name_them(hub: Session) -> None:
    with pytest.raises(MCPError) as raised:
        await hub.call("kitchen_nope")
    assert raised.value.error.code == types.INVALID_PARAMS and "kitchen_nope" in raised.value.error.message
    with pytest.raises(MCPError) as raised:
        await hub.client.read_resource("nobody+x://y")
    assert "nobody+x://y" in raised.value.error.message
    with pytest.raises(MCPError):
        await hub.client.get_prompt("kitchen_nope")


async def test_a_childs_protocol_error_keeps_its_code_and_names_the_child(hub: Session) -> None:
    with pytest.raises(MCPError) as raised:
        await hub.call("kitchen_boom")
    direct_error = None
    async with connect_direct(KITCHEN) as direct:
        try:
            await direct.session.send_request(
                types.CallToolRequest(params=types.CallToolRequestParams(name="boom", arguments={})), RAW
            )
        except MCPError as exc:
            direct_error = exc.error
    assert direct_error is not None
    assert raised.value.error.code == direct_error.code
    assert raised.value.error.message == f"kitchen: {direct_error.message}"


async def test_a_broken_child_is_reported_and_does_not_disturb_the_others(hub: Session) -> None:
    health = await hub.call("hub_health")
    states = {s["name"]: s for s in health["structuredContent"]["servers"]}
    assert states["broken"]["state"] == "failed"
    assert "command not found" in states["broken"]["last_error"]
    assert states["kitchen"]["state"] == "ready"
    assert states["kitchen"]["hidden_tools"] == 0 and states["locked"]["hidden_tools"] >= 3, "allow/deny is reported"
    assert (await hub.call("kitchen_echo", {"text": "still here"}))["content"][0]["text"] == "still here"


# ---- filtering, collisions, environment -------------------------------------------------------------------


async def test_tools_the_config_does_not_allow_never_reach_the_host(hub: Session) -> None:
    names = {t.name for t in (await hub.client.list_tools()).tools}
    assert "locked_echo" in names and "locked_add_tool" in names
    assert not {"locked_add", "locked_fail", "locked_env"} & names
    with pytest.raises(MCPError) as raised:
        await hub.call("locked_env", {"name": "PATH"})
    assert raised.value.error.code == types.INVALID_PARAMS


async def test_a_collision_keeps_the_first_child_and_is_logged(hub: Session) -> None:
    result = await hub.call("echo", {"text": "x"})
    assert result["content"][0]["text"] == "x", "solo (declared first) keeps the name; twin would answer 'twin:x'"
    collisions = [line for line in hub.log_lines() if line.get("event") == "name_collision"]
    assert {(c["name"], c["kept"], c["dropped"]) for c in collisions} >= {("echo", "solo", "twin")}


async def test_a_stdio_child_gets_its_env_but_not_the_hubs_secrets(hub: Session) -> None:
    assert (await hub.call("kitchen_env", {"name": "KITCHEN_SECRET"}))["content"][0]["text"] == "s3cret"
    assert (await hub.call("kitchen_env", {"name": "HUB_TEST_LEAK"}))["content"][0]["text"] == "<unset>"
    assert (await hub.call("kitchen_env", {"name": "PATH"}))["content"][0]["text"] != "<unset>"


# ---- notifications, progress, cancellation, logs, child-to-host requests ---------------------------------------


async def test_a_childs_list_changed_reaches_the_host_and_the_new_tool_works(hub: Session) -> None:
    await hub.call("kitchen_add_tool", {"name": "fresh"})
    await wait_for_tools(hub.client, hub.host, {"kitchen_fresh"})
    assert any(isinstance(n, types.ToolListChangedNotification) for n in hub.host.notifications)
    assert (await hub.call("kitchen_fresh"))["content"][0]["text"] == "dynamic fresh"


async def test_progress_reaches_the_host_under_its_own_token(hub: Session) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await hub.client.call_tool("kitchen_progress", {"steps": 3}, progress_callback=on_progress)
    assert result.content[0].text == "done 3"  # type: ignore[union-attr]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_the_hosts_cancellation_reaches_the_child(hub: Session) -> None:
    marker = hub.tmp / "cancel-marker"
    async with anyio.create_task_group() as tg:
        tg.start_soon(hub.call, "kitchen_wait_for_cancel", {"marker": str(marker)})
        await wait_for_file(Path(f"{marker}.started"))
        tg.cancel_scope.cancel()
    await wait_for_file(marker)
    assert marker.read_text() == "cancelled"
    assert (await hub.call("kitchen_echo", {"text": "after"}))["content"][0]["text"] == "after"


async def test_a_childs_log_messages_reach_the_host_naming_the_child(hub: Session) -> None:
    await hub.client.set_logging_level("debug")
    await hub.call("kitchen_log", {"level": "warning", "message": "careful"})
    await hub.host.wait_for(lambda: any(entry.data == "careful" for entry in hub.host.logs), "log")
    entry = next(e for e in hub.host.logs if e.data == "careful")
    assert entry.level == "warning" and entry.logger is not None and entry.logger.startswith("kitchen")


async def test_sampling_elicitation_and_roots_from_a_child_reach_the_host(hub: Session) -> None:
    sampled = await hub.call("kitchen_sample", {"prompt": "say hi"})
    assert sampled["content"][0]["text"] == hub.host.sampling_answer
    elicited = await hub.call("kitchen_elicit", {"message": "who?"})
    assert "accept" in elicited["content"][0]["text"] and "Ada" in elicited["content"][0]["text"]
    request = hub.host.elicited[-1]
    assert isinstance(request, types.ElicitRequestFormParams)
    assert request.requested_schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    roots = await hub.call("kitchen_roots")
    assert roots["content"][0]["text"] == "file:///work/project"


async def test_resource_updates_reach_the_subscribed_host_under_the_exposed_uri(hub: Session) -> None:
    uri = "kitchen+kitchen://static/hello"
    await hub.client.subscribe_resource(uri)
    await hub.call("kitchen_touch", {"uri": "kitchen://static/hello"})

    def updated() -> bool:
        return any(
            isinstance(n, types.ResourceUpdatedNotification) and str(n.params.uri) == uri
            for n in hub.host.notifications
        )

    await hub.host.wait_for(updated, "resources/updated")
    await hub.client.unsubscribe_resource(uri)


# ---- the call log -----------------------------------------------------------------------------------------------


async def test_every_routed_call_writes_one_structured_log_line(hub: Session) -> None:
    # The module's hub is shared: this call is told apart from the others by its argument size alone.
    text = "logged once, by the call-log test, with a size no other call has"
    await hub.call("kitchen_echo", {"text": text})
    await hub.call("kitchen_fail")
    # A result's line is written just after its answer: wait (bounded) for the last one.
    await wait_for_log(hub.log_file, "call", lambda e: e["name"] == "kitchen_fail" and e["outcome"] == "tool_error")
    calls = [line for line in hub.log_lines() if line.get("event") == "call"]
    size = len(json.dumps({"text": text}, separators=(",", ":")))
    echo = [c for c in calls if c["name"] == "kitchen_echo" and c["bytes_in"] == size]
    assert len(echo) == 1
    line = echo[0]
    assert line["child"] == "kitchen" and line["original"] == "echo" and line["outcome"] == "ok"
    assert line["duration_ms"] >= 0 and line["bytes_out"] > 0 and "arguments" not in line
    assert {"timestamp", "host_session", "request_id", "method"} <= set(line)
    assert any(c["name"] == "kitchen_fail" and c["outcome"] == "tool_error" for c in calls)
    assert "s3cret" not in hub.log_file.read_text(), "env values never reach the log"

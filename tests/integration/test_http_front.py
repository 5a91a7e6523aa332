"""The HTTP front (hub/host/http.py): what it takes, what it leaves to the SDK.

A real `hub serve --http` in front of the recorder child, driven by raw HTTP requests (the SDK's own HTTP client
library, so that request ids, headers and capabilities are the test's to choose) and by the SDK's client.
test_calls.py runs the common call paths (result, queueing, cancel, timeout, progress, exit) over HTTP too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.integration.test_calls import recorded, wait_recorded
from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

PROTOCOL = "2025-11-25"


def around_the_sdk(sent: dict[str, Any]) -> bool:
    """Whether the child got the call as the hub's own request (an id of the hub's connection to it)."""
    return isinstance(sent["id"], int)


def events(answer: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a POST's answer: one JSON object, or the events of an SSE stream."""
    if answer.headers.get("content-type", "").startswith("application/json"):
        return [json.loads(answer.content)] if answer.content else []
    return [json.loads(line[5:]) for line in answer.content.splitlines() if line.startswith(b"data:")]


class RawHost:
    """One Streamable HTTP session, opened and driven by hand."""

    def __init__(self, http: httpx2.AsyncClient, url: str, capabilities: dict[str, Any] | None = None) -> None:
        self.http, self.url, self.capabilities = http, url, capabilities or {}
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def open(self) -> None:
        info = {"name": "raw-host", "version": "1"}
        params = {"protocolVersion": PROTOCOL, "capabilities": self.capabilities, "clientInfo": info}
        answer = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert answer.status_code == 200, answer.text
        self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = PROTOCOL
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        with anyio.fail_after(WAIT):  # the recorder child may still be starting
            while "rec_sleep" not in {t["name"] for t in (await self.request(1, "tools/list"))["tools"]}:  # noqa: ASYNC110
                await anyio.sleep(0.05)

    async def post(self, message: dict[str, Any], **headers: str) -> httpx2.Response:
        return await self.http.post(self.url, json=message, headers={**self.headers, **headers})

    async def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> Any:
        answer = await self.post({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        (last,) = [m for m in events(answer) if m.get("id") == request_id]
        return last["result"]

    async def call(self, request_id: int, tool: str, arguments: dict[str, Any], into: list[Any]) -> None:
        """A tools/call whose stream is read to its end: each message it carried goes to `into`."""
        params = {"name": tool, "arguments": arguments}
        answer = await self.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        into.extend(events(answer))

    async def cancel(self, request_id: int) -> int:
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
        return (await self.post(notice)).status_code


@asynccontextmanager
async def http_hub(tmp_path: Path) -> AsyncIterator[tuple[str, Path, httpx2.AsyncClient]]:
    record = tmp_path / "record.jsonl"
    config = write_config(tmp_path, {"rec": python_child("tests.children.recorder", str(record))})
    async with serve_hub_http(config, tmp_path / "hub.log") as url, httpx2.AsyncClient(timeout=WAIT) as http:
        yield url, record, http


async def test_two_sessions_with_the_same_request_id_keep_their_calls_and_cancels_apart(tmp_path: Path) -> None:
    async with http_hub(tmp_path) as (url, record, http):
        a, b = RawHost(http, url), RawHost(http, url)
        await a.open()
        await b.open()
        seen_a: list[Any] = []
        seen_b: list[Any] = []
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.call, 7, "rec_sleep", {"seconds": 60, "text": "a"}, seen_a)
                (sent_a,) = await wait_recorded(record, "tools/call")
                tg.start_soon(b.call, 7, "rec_sleep", {"seconds": 60, "text": "b"}, seen_b)
                sent_b = (await wait_recorded(record, "tools/call", 2))[1]
                assert around_the_sdk(sent_a) and around_the_sdk(sent_b), "a call took the SDK path"
                # B's cancel ends B's call at the child, not A's, though both are request 7.
                assert await b.cancel(7) == 202
                (cancelled,) = await wait_recorded(record, "notifications/cancelled")
                assert cancelled["params"]["requestId"] == sent_b["id"]
                assert await a.cancel(7) == 202
                cancels = await wait_recorded(record, "notifications/cancelled", 2)
                assert cancels[1]["params"]["requestId"] == sent_a["id"]
        # A cancelled request gets no result: its stream ends with "cancelled", as the SDK's own server ends it.
        for seen in (seen_a, seen_b):
            assert [m.get("error", {}).get("code") for m in seen] == [-32800], seen
        # Both sessions go on.
        assert await a.request(8, "tools/call", {"name": "rec_echo", "arguments": {"text": "A"}}) == {
            "content": [{"type": "text", "text": "A"}]
        }


async def test_a_call_with_a_foreign_origin_is_refused_as_by_the_sdk(tmp_path: Path) -> None:
    async with http_hub(tmp_path) as (url, record, http):
        host = RawHost(http, url)
        await host.open()
        params = {"name": "rec_echo", "arguments": {"text": "x"}}
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
        answer = await host.post(call, origin="http://evil.example")
        assert answer.status_code == 403
        assert recorded(record, "tools/call") == []


SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}


async def test_a_child_s_request_during_a_call_goes_on_the_call_s_stream(tmp_path: Path) -> None:
    """A host that can be asked keeps the pass-through: the child's sampling/createMessage reaches it as an event of
    the call's own stream, and only the answer the host POSTs from its own session goes back to the child. (A
    roots/list is the session's, not the call's: it goes on the session's own stream, decision 017.)"""
    sampled = {"role": "assistant", "content": {"type": "text", "text": "from a"}, "model": "m"}
    async with http_hub(tmp_path) as (url, record, http):
        a = RawHost(http, url, capabilities={"roots": {"listChanged": True}, "sampling": {}})
        b = RawHost(http, url, capabilities={"sampling": {}})
        await a.open()
        await b.open()
        params = {"name": "rec_ask", "arguments": {"method": "sampling/createMessage", "params": SAMPLE}}
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(WAIT):
            async with http.stream("POST", url, json=call, headers=a.headers) as stream:
                assert stream.status_code == 200
                async for line in stream.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    seen.append(message := json.loads(line[5:]))
                    if message.get("method") == "sampling/createMessage":
                        answer = {"jsonrpc": "2.0", "id": message["id"], "result": sampled}
                        # Another session's answer under the same id is not this call's.
                        wrong = {**answer, "result": {**sampled, "content": {"type": "text", "text": "from b"}}}
                        assert (await b.post(wrong)).status_code in (200, 202)
                        assert (await a.post(answer)).status_code == 202
        assert [m.get("method") for m in seen] == ["sampling/createMessage", None]
        text = seen[-1]["result"]["content"][0]["text"]
        assert json.loads(text)["result"] == sampled
        (sent,) = recorded(record, "tools/call")
        assert around_the_sdk(sent), "a host that declared roots and sampling lost the pass-through"


async def test_a_child_s_request_a_host_did_not_declare_gets_an_error(tmp_path: Path) -> None:
    async with http_hub(tmp_path) as (url, record, http):
        host = RawHost(http, url, capabilities={"roots": {}})
        await host.open()
        arguments = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
        result = await host.request(5, "tools/call", {"name": "rec_ask", "arguments": arguments})
        error = json.loads(result["content"][0]["text"])["error"]
        assert "did not declare the sampling capability" in error["message"]
        (sent,) = recorded(record, "tools/call")
        assert around_the_sdk(sent)


async def test_a_request_to_the_host_ends_with_its_call(tmp_path: Path) -> None:
    """The host cancels the call while the hub waits for its answer to the child's request: the wait ends, the
    child is told, and the session goes on."""
    async with http_hub(tmp_path) as (url, record, http):
        host = RawHost(http, url, capabilities={"sampling": {}})
        await host.open()
        params = {"name": "rec_ask", "arguments": {"method": "sampling/createMessage", "params": SAMPLE}}
        call = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": params}
        with anyio.fail_after(WAIT):
            async with http.stream("POST", url, json=call, headers=host.headers) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and json.loads(line[5:]).get("method") == "sampling/createMessage":
                        assert await host.cancel(11) == 202
                        break
            (cancelled,) = await wait_recorded(record, "notifications/cancelled")
            while not (answers := recorded(record, None)):  # noqa: ASYNC110 - another process writes the file
                await anyio.sleep(0.02)
        (sent,) = recorded(record, "tools/call")
        assert cancelled["params"]["requestId"] == sent["id"]
        (answer,) = answers  # the child's sampling/createMessage got an error, not silence
        assert answer["id"].startswith("rec-ask-") and "ended before it answered" in answer["error"]["message"]
        assert await host.request(12, "tools/call", {"name": "rec_echo", "arguments": {"text": "on"}}) == {
            "content": [{"type": "text", "text": "on"}]
        }


async def test_a_child_s_log_message_during_a_call_reaches_the_host(tmp_path: Path) -> None:
    async with http_hub(tmp_path) as (url, record, _):
        host = Host()
        async with connect_host(url, host, capabilities=False) as client:
            await wait_for_tools(client, host, {"rec_log"})
            result = await client.call_tool("rec_log", {"text": "careful"})
            assert not result.is_error
            with anyio.fail_after(WAIT):
                while not host.logs:
                    await host.changed.wait()
        (sent,) = recorded(record, "tools/call")
        assert around_the_sdk(sent)
        (log,) = host.logs
        assert (log.level, log.logger, log.data) == ("warning", "rec/rec-logger", "careful")

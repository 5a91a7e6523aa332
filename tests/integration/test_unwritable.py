"""Nothing unwritable reaches a child (issue 30): a request whose arguments hold a lone surrogate is refused at
once with -32602 naming the field, and the child is never written to; the hub and the child live on.

Against the real `mcp-server-time` over stdio (which, once given such a line, never answers it) and our kitchen
child over Streamable HTTP, with hosts that write raw bytes: the stdio front and the HTTP front.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.differential.servers import python_missing
from tests.fuzz._cases import call_bytes
from tests.fuzz._drive import HOSTILE, Session, StdioHub, http_answers, http_hub, stdio_hub, wait_for_tool
from tests.support.children import write_config
from tests.support.paths import REPO
from tests.support.processes import stop_process
from tests.support.waits import wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# Refused by the hub itself: far sooner than any child timeout (the time server's call once took ~20 s to fail).
AT_ONCE = 5.0
WAIT = 30.0


@asynccontextmanager
async def kitchen_over_http(tmp: Path) -> AsyncIterator[int]:
    port_file = tmp / "kitchen.port"
    command = [sys.executable, "-m", "tests.children.kitchen", "--transport", "http", "--port-file", str(port_file)]
    process = await anyio.open_process(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    async with process:
        try:
            await wait_for_file(port_file)
            yield int(port_file.read_text())
        finally:
            await stop_process(process, grace=10)


def config(tmp: Path, port: int) -> Path:
    missing = python_missing("mcp_server_time")
    if missing:
        pytest.skip(missing)
    return write_config(
        tmp,
        {
            "fz": {**HOSTILE, "prefix": "fz"},  # what the fuzz driver waits for before it starts
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
            "web": {"url": f"http://127.0.0.1:{port}/mcp"},
        },
        {"watch": False, "startup_listing_wait": 60},
    )


def assert_refused(answer: dict[str, Any], field: str, child: str) -> None:
    error = answer.get("error")
    assert isinstance(error, dict), answer
    assert error["code"] == -32602, error
    assert error["data"] == {"field": field}, error
    assert field in error["message"] and f"server '{child}'" in error["message"], error


CASES = [
    ("time_get_current_time", {"timezone": "\udfff"}, "params.arguments.timezone", "time"),
    (
        "time_convert_time",
        {"source_timezone": "Etc/UTC", "time": "1\ud800", "target_timezone": "UTC"},
        "params.arguments.time",
        "time",
    ),
    ("web_echo", {"text": "half an emoji: \ud83d"}, "params.arguments.text", "web"),
    ("web_echo", {"text": "ok", "\udc00": 1}, "params.arguments.\\udc00", "web"),
]


async def test_stdio_front_refuses_a_lone_surrogate_at_once_and_both_children_live_on(tmp_path: Path) -> None:
    async with kitchen_over_http(tmp_path) as port, stdio_hub(config(tmp_path, port), tmp_path / "hub.log") as hub:
        await wait_for_tool(hub, "time_get_current_time", WAIT)
        await wait_for_tool(hub, "web_echo", WAIT)
        for n, (tool, arguments, field, child) in enumerate(CASES):
            request_id = f"bad-{n}"
            started = time.monotonic()
            await hub.write(call_bytes(request_id, tool, arguments) + b"\n")
            assert not await hub.wait_for(Counter({request_id: 1}), AT_ONCE), f"{tool}: not refused within {AT_ONCE}s"
            assert time.monotonic() - started < AT_ONCE
            assert_refused(hub.wire.by_id[request_id][-1], field, child)
        await still_served(hub)


async def still_served(hub: StdioHub) -> None:
    now = await hub.request(
        "ok-time", "tools/call", {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
    )
    assert "UTC" in now["result"]["content"][0]["text"], now
    echo = await hub.request("ok-web", "tools/call", {"name": "web_echo", "arguments": {"text": "still here"}})
    assert echo["result"]["content"][0]["text"] == "still here", echo
    assert hub.alive()


async def test_http_front_refuses_a_lone_surrogate_at_once_and_both_children_live_on(tmp_path: Path) -> None:
    async with (
        kitchen_over_http(tmp_path) as port,
        http_hub(config(tmp_path, port), tmp_path / "hub.log") as served,
        httpx2.AsyncClient(timeout=WAIT) as http,
    ):
        session = Session(http, served.url)
        await session.open()  # waits for the fuzz child's tools

        async def call(request_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            params = {"name": tool, "arguments": arguments}
            with anyio.fail_after(WAIT):
                while True:  # the other children may still be starting: their tools are unknown until then
                    reply = await session.post(
                        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
                    )
                    answers, problem = http_answers(reply.headers.get("content-type", ""), reply.content)
                    assert problem is None and len(answers) == 1, reply.content[:300]
                    error = answers[0].get("error") or {}
                    if "unknown tool" not in str(error.get("message", "")).lower():
                        return answers[0]
                    await anyio.sleep(0.1)

        await call("warm-time", "time_get_current_time", {"timezone": "UTC"})
        await call("warm-web", "web_echo", {"text": "x"})
        for n, (tool, arguments, field, child) in enumerate(CASES):
            started = time.monotonic()
            answer = await call(f"bad-{n}", tool, arguments)
            assert time.monotonic() - started < AT_ONCE, f"{tool}: not refused within {AT_ONCE}s"
            assert_refused(answer, field, child)
        now = await call("ok-time", "time_get_current_time", {"timezone": "UTC"})
        assert "UTC" in now["result"]["content"][0]["text"], now
        echo = await call("ok-web", "web_echo", {"text": "still here"})
        assert echo["result"]["content"][0]["text"] == "still here", echo
        assert served.alive()

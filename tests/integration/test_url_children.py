"""Children reached by URL: Streamable HTTP and legacy SSE, with real servers on loopback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.children import write_config
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import stop_process
from tests.support.waits import wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@asynccontextmanager
async def served(tmp: Path, module: str, *args: str) -> AsyncIterator[int]:
    """A child served over HTTP on a free loopback port; yields the port once it accepts connections."""
    port_file = tmp / f"{module}.port"
    command = [sys.executable, "-m", module, *args, "--port-file", str(port_file)]
    process = await anyio.open_process(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    async with process:
        try:
            await wait_for_file(port_file)  # written once the server accepts connections
            yield int(port_file.read_text())
        finally:
            await stop_process(process, grace=10)


async def call(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    return await client.call_tool(name, arguments)


async def test_http_and_sse_children_are_merged_and_called(tmp_path: Path) -> None:
    async with (
        served(tmp_path, "tests.children.kitchen", "--transport", "http") as http_port,
        served(tmp_path, "tests.children.twin", "--transport", "sse") as sse_port,
    ):
        config = write_config(
            tmp_path,
            {
                "web": {"url": f"http://127.0.0.1:{http_port}/mcp"},
                "old": {"url": f"http://127.0.0.1:{sse_port}/sse"},
            },
        )
        host = Host()
        async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
            await wait_for_tools(client, host, {"web_echo", "old_echo"})
            assert (await call(client, "web_echo", {"text": "over http"})).content[0].text == "over http"
            assert (await call(client, "old_echo", {"text": "x"})).content[0].text == "twin:x"
            read = await client.read_resource("web+kitchen://static/hello")
            assert read.contents[0].text == "hello world"  # type: ignore[union-attr]


async def test_a_result_over_one_mebibyte_from_an_http_child_arrives_whole(tmp_path: Path) -> None:
    size = 3 * 1024 * 1024  # over the SDK's default 1 MiB SSE event limit, under the hub's 16 MiB
    async with served(tmp_path, "bench.child_sdk", "--http") as port:
        config = write_config(tmp_path, {"big": {"url": f"http://127.0.0.1:{port}/mcp"}})
        host = Host()
        async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
            await wait_for_tools(client, host, {"big_payload"})
            result = await call(client, "big_payload", {"bytes": size})
            assert not result.is_error, result.content[0].text
            assert len(result.content[0].text) == size

"""Secrets never reach a log line: a child that sends its credentials back in its stderr, a result and an error."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.support.children import python_child, write_config
from tests.support.mcp_client import connect_hub, hub_params

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a3f2e1d0c"


async def test_a_childs_leaked_secret_is_in_no_log_line(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "leaky-header").write_text("hdr-0a1b2c3d4e5f6a7b\n")
    leaky = {
        **python_child("tests.children.leaky"),
        "env": {"LEAKY_TOKEN": TOKEN, "LEAKY_HEADER": "${secret:leaky-header}"},
        "log_arguments": True,
    }
    config = write_config(tmp_path, {"leaky": leaky})
    config.write_text(config.read_text() + "secrets: {dir: secrets}\n")
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--log-level", "debug")) as client:
        result = await client.call_tool("leaky_leak", {"echo": f"my token is {TOKEN}", "auth": "Bearer abcdefghij123"})
        assert TOKEN in result.content[0].text  # type: ignore[union-attr]  # results reach the host as sent
        with pytest.raises(MCPError, match="denied for"):
            await client.call_tool("leaky_leak_error", {})
    text = log.read_text()
    assert "leaky: starting with token [REDACTED] and header [REDACTED]" in text, "the stderr line, redacted"
    assert "denied for [REDACTED]" in text and "my token is [REDACTED]" in text
    for secret in (TOKEN, "hdr-0a1b2c3d4e5f6a7b", "abcdefghij123"):
        assert secret not in text


async def test_listed_secrets_are_redacted_and_redact_output_cleans_results(tmp_path: Path) -> None:
    """A value under the child's `secrets:` is in no log line though its variable's name says nothing; with
    `redact_output: true` the child's result reaches the host without its credentials."""
    plain_named = "plain-value-7c6b5a4d3e2f"
    leaky = {
        **python_child("tests.children.leaky"),
        "env": {"LEAKY_TOKEN": TOKEN, "LEAKY_HEADER": plain_named},
        "secrets": [plain_named],
        "redact_output": True,
    }
    config = write_config(tmp_path, {"leaky": leaky})
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--log-level", "debug")) as client:
        result = await client.call_tool("leaky_leak", {})
        assert result.content[0].text == "your token is [REDACTED]"  # type: ignore[union-attr]
    text = log.read_text()
    assert "header [REDACTED]" in text
    assert plain_named not in text and TOKEN not in text


class _LeakyHttpChild(BaseHTTPRequestHandler):
    """A URL child (Streamable HTTP, JSON answers) that sends back the credentials of the headers it received: in
    its `leak` tool's text and in its `leak_error` tool's error message."""

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in message:
            self._send(202, b"")
            return
        method, params = message.get("method"), message.get("params") or {}
        leaked = f"{self.headers.get('authorization')} {self.headers.get('x-api-key')}"
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        if method == "initialize":
            answer["result"] = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "leaky-http", "version": "1.0.0"},
            }
        elif method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("leak", "leak_error")]
            answer["result"] = {"tools": tools}
        elif method == "tools/call" and params.get("name") == "leak":
            answer["result"] = {"content": [{"type": "text", "text": f"you sent {leaked}"}]}
        elif method == "tools/call":
            answer = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32001, "message": f"no: {leaked}"}}
        self._send(200, json.dumps(answer).encode(), "application/json")

    def do_GET(self) -> None:
        self._send(405, b"")

    def do_DELETE(self) -> None:
        self._send(405, b"")

    def _send(self, status: int, body: bytes, kind: str | None = None) -> None:
        self.send_response(status)
        if kind:
            self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


async def test_a_url_childs_headers_are_in_no_log_line(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LeakyHttpChild)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    api_key = "key-5e4d3c2b1a0f9e8d"
    try:
        child = {
            "url": f"http://127.0.0.1:{server.server_address[1]}/mcp",
            "headers": {"Authorization": f"Token {TOKEN}", "X-Api-Key": api_key},
        }
        config = write_config(tmp_path, {"web": child})
        log = tmp_path / "hub.log"
        async with connect_hub(hub_params(config, log, "--log-level", "debug")) as client:
            result = await client.call_tool("web_leak", {})
            assert result.content[0].text == f"you sent Token {TOKEN} {api_key}"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no: "):
                await client.call_tool("web_leak_error", {})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    text = log.read_text()
    assert "no: [REDACTED] [REDACTED]" in text, "the child's error is logged, its credentials are not"
    assert TOKEN not in text and api_key not in text

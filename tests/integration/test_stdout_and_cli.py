"""What a new user touches first: the stdio wire stays clean, and `hub check`, `hub list`, `hub call` work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from tests.support.children import python_child, write_config
from tests.support.logs import log_events
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration


def _request(id_: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


@pytest.mark.anyio
async def test_stdout_carries_nothing_but_json_rpc(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"kitchen": python_child("tests.children.kitchen"), "broken": {"command": "/nonexistent", "max_restarts": 0}},
        {"startup_listing_wait": 60},  # the listing below waits for kitchen on a loaded machine too (bounded)
    )
    process = await anyio.open_process(
        [sys.executable, "-m", "hub", "serve", "--config", str(config), "--log-level", "debug"], cwd=REPO
    )
    lines: list[str] = []
    assert process.stdin and process.stdout
    errors: list[str] = []

    async def drain_stderr() -> None:  # concurrently, so that a full stderr pipe never blocks the hub
        assert process.stderr
        async for chunk in TextReceiveStream(process.stderr):
            errors.append(chunk)

    async with process, anyio.create_task_group() as tg:
        tg.start_soon(drain_stderr)
        stdout = TextReceiveStream(process.stdout)
        buffer = ""

        async def next_message() -> dict[str, Any]:
            nonlocal buffer
            while "\n" not in buffer:
                buffer += await stdout.receive()
            line, buffer = buffer.split("\n", 1)
            lines.append(line)
            parsed: dict[str, Any] = json.loads(line)
            return parsed

        async def until(predicate: Any) -> dict[str, Any]:
            while not predicate(message := await next_message()):
                pass
            return message

        with anyio.fail_after(WAIT):
            await process.stdin.send(
                _request(
                    1,
                    "initialize",
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                )
            )
            await until(lambda m: m.get("id") == 1)
            await process.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            await process.stdin.send(_request(2, "logging/setLevel", {"level": "debug"}))
            await until(lambda m: m.get("id") == 2)
            # Answered once the servers have started (the first listing waits for them), kitchen's tools included.
            await process.stdin.send(_request(5, "tools/list"))
            listing = await until(lambda m: m.get("id") == 5)
            assert "kitchen_log" in {tool["name"] for tool in listing["result"]["tools"]}
            await process.stdin.send(
                _request(3, "tools/call", {"name": "kitchen_log", "arguments": {"level": "info", "message": "m"}})
            )
            await until(lambda m: m.get("id") == 3)
            await process.stdin.send(_request(4, "tools/call", {"name": "nope", "arguments": {}}))
            await until(lambda m: m.get("id") == 4)
            await process.stdin.aclose()
            async for chunk in stdout:
                buffer += chunk
            await process.wait()
    lines += [line for line in buffer.split("\n") if line]
    assert lines, "the hub answered"
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert any('"notifications/message"' in line for line in lines), "child logs travel as protocol messages"
    assert process.returncode == 0
    log = [json.loads(line) for line in "".join(errors).splitlines() if line.startswith("{")]
    events = {entry["event"] for entry in log}
    assert {"hub_started", "child_ready", "call"} <= events, "the log lines went to stderr, as JSON"


@pytest.mark.anyio
async def test_an_http_hub_stops_without_a_traceback_and_logs_only_json(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen", "--tools", "add")})
    log = tmp_path / "hub.log"
    async with serve_hub_http(config, log) as url:  # stopped by SIGTERM on the way out
        host = Host()
        async with connect_host(url, host, capabilities=False) as client:
            await wait_for_tools(client, host, {"kitchen_add"})
            assert not (await client.call_tool("kitchen_add", {"a": 1, "b": 2})).is_error
    assert log_events(log, "hub_stopped"), "the hub stopped gracefully"
    err = log.with_suffix(".err").read_text()
    assert "Traceback" not in err and "CancelledError" not in err, err
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert not [e for e in entries if e.get("level") in ("error", "critical")], "a stop is not an error"


def run_cli(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", *args, "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
    )


@pytest.fixture
def mixed_config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "kitchen": python_child("tests.children.kitchen"),
            "broken": {"command": "/nonexistent/server", "max_restarts": 0},
        },
    )


def test_check_prints_each_server_and_fails_when_one_failed(mixed_config: Path) -> None:
    result = run_cli("check", config=mixed_config)
    assert result.returncode == 1
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line}
    assert rows["kitchen"].split()[1] == "ready"
    assert "failed" in rows["broken"] and "command not found" in rows["broken"]
    assert "1/2 servers ready" in result.stdout


def test_list_json_shows_the_catalog_with_listing_sizes(mixed_config: Path) -> None:
    result = run_cli("list", "--json", config=mixed_config)
    assert result.returncode == 0, result.stderr
    catalog = json.loads(result.stdout)
    names = {t["name"] for t in catalog["tools"]}
    assert {"kitchen_echo", "kitchen_add", "hub_health"} <= names
    kitchen = next(s for s in catalog["servers"] if s["name"] == "kitchen")
    assert kitchen["tools"] == len([n for n in names if n.startswith("kitchen_")])
    assert kitchen["bytes"] > 0 and kitchen["approx_tokens"] == (kitchen["bytes"] + 3) // 4
    assert "kitchen+kitchen://static/hello" in {r["uri"] for r in catalog["resources"]}


def test_call_prints_the_result_and_reports_errors(mixed_config: Path) -> None:
    result = run_cli("call", "kitchen_add", '{"a": 2, "b": 3}', config=mixed_config)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"sum": 5}  # printed once: the structured content repeats the text
    failed = run_cli("call", "kitchen_fail", config=mixed_config)
    assert failed.returncode == 1 and "on purpose" in failed.stdout  # the tool's own error is its output
    unknown = run_cli("call", "kitchen_nope", config=mixed_config)
    assert unknown.returncode == 1 and "Unknown tool: 'kitchen_nope'" in unknown.stderr


def test_a_bad_config_names_the_file_line_and_fix_and_nothing_starts(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers:\n  time:\n    comand: mcp-server-time\n")
    result = run_cli("check", config=config)
    assert result.returncode == 2
    assert f"{config}:3: servers.time.comand: unknown key 'comand'; did you mean 'command'?" in result.stderr

"""`printf '<initialize>\\n<call>\\n' | hub serve`: stdin ends right after the lines, as in a script or a quick try
at the shell. The hub answers what it was sent before it exits (as `hub connect` does), bounded by
`hub.drain_timeout`; the real `hub serve` process is run with its stdin closed at once."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.children import python_child, write_config
from tests.support.paths import REPO
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


async def serve(config: Path, tmp: Path, *messages: dict[str, Any]) -> tuple[dict[Any, Any], float, str]:
    """`hub serve` fed `messages` then end of input: its answers by id, how long it ran, and its stderr."""
    began = time.monotonic()
    with anyio.fail_after(WAIT * 2):
        done = await anyio.run_process(
            [sys.executable, "-m", "hub", "serve", "-c", str(config), "--log-file", str(tmp / "hub.log")],
            input=lines(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                *messages,
            ),
            cwd=REPO,
            check=False,
        )
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr.decode()
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines()) if "id" in m}
    return answers, took, done.stderr.decode()


async def test_the_answers_to_what_was_sent_come_before_the_hub_exits(tmp_path: Path) -> None:
    """The call is read while its server is still starting: it is answered once the server is up, not dropped."""
    config = write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen")})
    call = {"name": "kitchen_echo", "arguments": {"text": "hi"}}
    answers, _, stderr = await serve(
        config,
        tmp_path,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    )
    assert answers[1]["result"]["serverInfo"]["name"] == "mcp-hub", stderr
    assert answers[2].get("result", {}).get("content", [{}])[0].get("text") == "hi", (answers, stderr)
    assert "kitchen_echo" in {t["name"] for t in answers[3]["result"]["tools"]}


async def test_a_call_that_never_ends_holds_the_exit_no_longer_than_drain_timeout(tmp_path: Path) -> None:
    """A call the child is running when stdin ends, and that would run for 10 minutes: the hub waits for it only
    `drain_timeout` (here 8 s: time for a loaded machine to start the child and hand it the call), then exits."""
    config = write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen")}, {"drain_timeout": 8})
    marker = tmp_path / "call"
    call = {"name": "kitchen_wait_for_cancel", "arguments": {"marker": str(marker), "seconds": 600}}
    answers, took, stderr = await serve(
        config, tmp_path, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    )
    assert (tmp_path / "call.started").exists(), ("the call never reached the child", answers, stderr)
    assert 1 in answers and 2 not in answers, (answers, stderr)
    # The 8 s allowed plus the hub's start and stop on a loaded machine; far below the call's 600 s.
    assert took < 40, f"hub serve took {took:.1f}s to exit with a call that never ends and drain_timeout 8"

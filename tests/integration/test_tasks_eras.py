"""Tasks through the hub in each era, on the stdio front as a host writes it by hand (the SDK's client speaks
neither the 2025-11-25 tasks nor the 2026-07-28 extension): server-everything's `simulate-research-query`, whose
`execution.taskSupport` is `required`. Decision 015.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.children import everything_server, write_config
from tests.support.logs import log_events
from tests.support.paths import REPO
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TOOL = "everything_simulate-research-query"
TASKS = "io.modelcontextprotocol/tasks"


def envelope(extensions: dict[str, Any] | None = None) -> dict[str, Any]:
    capabilities = {"extensions": extensions} if extensions is not None else {}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


class StdioHost:
    """A host writing JSON-RPC lines to `hub serve` by hand: answers by id, and the notifications it got."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.answers: dict[int, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.changed = anyio.Event()
        self._next = 0

    async def read(self) -> None:
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if "id" in message and "method" not in message:
                    self.answers[message["id"]] = message
                elif "method" in message and "id" not in message:
                    self.notifications.append(message)
                self.changed.set()
                self.changed = anyio.Event()

    async def wait(self, done: Any) -> None:
        with anyio.fail_after(WAIT):
            while not done():
                await self.changed.wait()

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        request_id = self._next
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.process.stdin.send(json.dumps(line).encode() + b"\n")
        await self.wait(lambda: request_id in self.answers)
        return {k: v for k, v in self.answers[request_id].items() if k in ("result", "error")}


@asynccontextmanager
async def stdio_hub(tmp_path: Path) -> AsyncIterator[StdioHost]:
    config = write_config(tmp_path, {"everything": everything_server()}, {"startup_listing_wait": 60})
    command = [sys.executable, "-m", "hub", "serve", "--config", str(config), "--log-file", str(tmp_path / "hub.log")]
    async with await anyio.open_process(command, cwd=REPO, stderr=subprocess.DEVNULL) as process:
        host = StdioHost(process)
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.read)
            try:
                yield host
            finally:
                await process.stdin.aclose()
                with anyio.move_on_after(WAIT):
                    await process.wait()
                tg.cancel_scope.cancel()


async def until_over(host: StdioHost, task_id: str, meta: dict[str, Any]) -> dict[str, Any]:
    """tasks/get at the task's own pollIntervalMs, as the extension tells a client, until it is over (bounded)."""
    for _ in range(int(WAIT * 2)):
        task: dict[str, Any] = (await host.send("tasks/get", {"taskId": task_id, "_meta": meta}))["result"]
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        await anyio.sleep(task["pollIntervalMs"] / 1000)
    raise AssertionError(f"task {task_id} still working after {WAIT * 2} polls")


async def test_a_2026_host_gets_the_tasks_extension_for_a_2025_server(tmp_path: Path) -> None:
    async with stdio_hub(tmp_path) as host:
        discovered = (await host.send("server/discover", {"_meta": envelope()}))["result"]
        assert discovered["capabilities"]["extensions"][TASKS] == {}
        call = {"name": TOOL, "arguments": {"topic": "tides"}}

        # The tool runs only as a task: a host without the extension is told which capability it lacks.
        refused = await host.send("tools/call", {**call, "_meta": envelope()})
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}

        meta = envelope({TASKS: {}})
        created = (await host.send("tools/call", {**call, "_meta": meta}))["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        assert created["ttlMs"] == 300_000 and created["pollIntervalMs"] == 1000 and "ttl" not in created
        task_id = created["taskId"]
        done = await until_over(host, task_id, meta)
        assert done["status"] == "completed" and done["resultType"] == "complete"
        assert "# Research Report: tides" in done["result"]["content"][0]["text"]

        # The extension has no tasks/result nor tasks/list; tasks/update is for a task waiting for input.
        for method in ("tasks/result", "tasks/list"):
            missing = await host.send(method, {"taskId": task_id, "_meta": meta})
            assert missing["error"]["code"] == -32601 and "2026-07-28 tasks extension" in missing["error"]["message"]
        update = await host.send("tasks/update", {"taskId": task_id, "inputResponses": {}, "_meta": meta})
        assert update["error"] == {
            "code": -32602,
            "message": "the task is not waiting for input (its status is 'completed')",
        }

        second = (await host.send("tools/call", {**call, "_meta": meta}))["result"]["taskId"]
        cancelled = (await host.send("tasks/cancel", {"taskId": second, "_meta": meta}))["result"]
        assert cancelled["status"] == "cancelled" and cancelled["taskId"] == second
    ended = [c["task_status"] for c in log_events(tmp_path / "hub.log", "call") if "task" in c]
    assert sorted(ended) == ["cancelled", "completed"]


async def test_a_2026_host_answers_its_tasks_question_with_tasks_update(tmp_path: Path) -> None:
    """The server asks for input during the task (an elicitation with `relatedTask`, 2025-11-25): a 2026-07-28 host
    that declared elicitation finds it in tasks/get's `inputRequests` and answers it with tasks/update."""
    async with stdio_hub(tmp_path) as host:
        meta = envelope({TASKS: {}})
        meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = {}
        call = {"name": TOOL, "arguments": {"topic": "tides", "ambiguous": True}, "_meta": meta}
        task_id = (await host.send("tools/call", call))["result"]["taskId"]
        for _ in range(int(WAIT * 2)):  # at the task's own pollIntervalMs, as the extension tells a client
            task = (await host.send("tasks/get", {"taskId": task_id, "_meta": meta}))["result"]
            if task.get("inputRequests"):
                break
            assert task["status"] in ("working", "input_required"), task
            await anyio.sleep(task["pollIntervalMs"] / 1000)
        assert task["status"] == "input_required"
        ((key, asked),) = task["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        answer = {"action": "accept", "content": {"interpretation": "ocean tides"}}
        updated = await host.send("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}, "_meta": meta})
        assert updated["result"]["resultType"] == "complete"
        done = await until_over(host, task_id, meta)
        assert done["status"] == "completed" and "inputRequests" not in done
        assert "Clarification**: ocean tides" in done["result"]["content"][0]["text"]


async def test_a_2025_host_is_told_each_change_of_its_task(tmp_path: Path) -> None:
    async with stdio_hub(tmp_path) as host:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "tasks" in (await host.send("initialize", init))["result"]["capabilities"]
        await host.process.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        created = await host.send("tools/call", {"name": TOOL, "arguments": {"topic": "tides"}, "task": {}})
        task_id = created["result"]["task"]["taskId"]

        def statuses() -> list[str]:
            return [
                n["params"]["status"]
                for n in host.notifications
                if n["method"] == "notifications/tasks/status" and n["params"]["taskId"] == task_id
            ]

        await host.wait(lambda: "completed" in statuses())
        assert statuses()[-1] == "completed"
        result = (await host.send("tasks/result", {"taskId": task_id}))["result"]
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}

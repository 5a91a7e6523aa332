"""Tasks through the hub, against @modelcontextprotocol/server-everything's task-capable `simulate-research-query`:
the hub owns the task it hands out (docs/decisions/015-hub-owned-tasks.md).

A real `hub serve --http` with tokens for three people (the team front of tests/integration/test_team.py), the SDK's
client as each person's host.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.faults._helpers import descendants
from tests.integration.test_team import as_person, create_token
from tests.support.children import everything_server
from tests.support.logs import log_events
from tests.support.mcp_client import Host, connect_host
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TOOL = "everything_simulate-research-query"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
POLICIES = [
    {"name": "researchers", "groups": ["research"], "allow": ["everything_*"]},
    {"name": "echo-only", "groups": ["echo"], "allow": ["everything_echo"]},
]


def tasks_config(directory: Path) -> Path:
    path = directory / "servers.yaml"
    document = {
        "hub": {"startup_listing_wait": 60},
        "auth": {"tokens": "tokens.json"},
        "policies": POLICIES,
        "default_policy": "deny",
        "servers": {"everything": everything_server()},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def shared_config(directory: Path, redis_url: str) -> Path:
    """server-everything for replicas that share their state in Redis (`state: {backend: redis}`)."""
    path = directory / "servers.yaml"
    document = {
        "hub": {"startup_listing_wait": 60},
        "state": {"backend": "redis", "url": redis_url},
        "servers": {"everything": everything_server()},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


async def raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The raw answer (result or error) to a request whose result the SDK's client would not parse (a
    CreateTaskResult to a tools/call). Sent on the session's dispatcher, a private attribute of the SDK: tests only."""
    dispatcher = client.session._dispatcher
    try:
        return {"result": await dispatcher.send_raw_request(method, params, {"timeout": WAIT})}
    except MCPError as error:
        return {"error": error.error.model_dump(by_alias=True, exclude_none=True, mode="json")}


async def create(client: Client, topic: str, tool: str = TOOL) -> dict[str, Any]:
    return await raw(client, "tools/call", {"name": tool, "arguments": {"topic": topic}, "task": {"ttl": 60_000}})


async def test_a_task_is_the_hubs_own_and_only_its_creator_reaches_it(tmp_path: Path) -> None:
    config = tasks_config(tmp_path)
    alice = create_token(config, "alice", "research")
    bob = create_token(config, "bob", "research")
    eve = create_token(config, "eve", "echo")
    log = tmp_path / "hub.log"
    async with (
        serve_hub_http(config, log) as url,
        as_person(url, alice) as a,
        as_person(url, bob) as b,
        as_person(url, eve) as e,
    ):
        tasks = a.server_capabilities.tasks
        assert tasks is not None and tasks.list is not None and tasks.cancel is not None
        assert tasks.requests is not None and tasks.requests.tools is not None and tasks.requests.tools.call is not None
        assert TOOL in {t.name for t in (await a.list_tools()).tools}

        created = await create(a, "tides")
        task = created["result"]["task"]
        task_id = task["taskId"]
        assert task["status"] == "working" and task["ttl"] == 300_000 and task["pollInterval"] == 1000
        assert len(task_id) > 100, "a sealed id, not the server's 32 hex digits"

        got = await raw(a, "tasks/get", {"taskId": task_id})
        assert got["result"]["taskId"] == task_id and got["result"]["status"] in ("working", "completed")
        listed = await raw(a, "tasks/list", {})
        assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]

        # Another identity, allowed the same tool, gets what an unknown id gets, for every method; its list is empty.
        unknown = {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert await raw(b, method, {"taskId": task_id}) == {"error": unknown}, method
            assert await raw(a, method, {"taskId": task_id[:-4] + "AAAA"}) == {"error": unknown}, method
        assert (await raw(b, "tasks/list", {}))["result"] == {"tasks": []}

        # tasks/result waits until the task is over, and names the hub's task.
        result = await raw(a, "tasks/result", {"taskId": task_id})
        assert "# Research Report: tides" in result["result"]["content"][0]["text"]
        assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        done = await raw(a, "tasks/get", {"taskId": task_id})
        assert done["result"]["status"] == "completed"
        refused = await raw(a, "tasks/cancel", {"taskId": task_id})
        assert refused == {
            "error": {"code": -32602, "message": "Cannot cancel task: already in terminal status 'completed'"}
        }

        # A second task, cancelled: the server is told, and its answer is the task's.
        second = (await create(a, "reefs"))["result"]["task"]["taskId"]
        cancelled = await raw(a, "tasks/cancel", {"taskId": second})
        assert cancelled["result"]["status"] == "cancelled" and cancelled["result"]["taskId"] == second
        assert (await raw(a, "tasks/get", {"taskId": second}))["result"]["status"] == "cancelled"
        assert "error" in await raw(a, "tasks/result", {"taskId": second})
        assert {t["taskId"] for t in (await raw(a, "tasks/list", {}))["result"]["tasks"]} == {task_id, second}

        # The policy decides a task's creation as any call's: hidden from eve, as a tool that does not exist.
        assert await create(e, "tides") == {"error": {"code": -32602, "message": f"Unknown tool: '{TOOL}'"}}
        # A tool its server does not run as a task: -32601, never a task id.
        not_task = await create(a, "x", "everything_echo")
        assert not_task["error"]["code"] == -32601 and "cannot run as a task" in not_task["error"]["message"]

    lines = [c for c in log_events(log, "call") if c["name"] == TOOL]
    calls = [c for c in lines if c["method"] == "tools/call"]
    created_lines = [c for c in calls if "task" not in c and c["identity"] == "alice"]
    ended = {c["task_status"]: c for c in calls if "task" in c}
    assert len(created_lines) == 2 and all(c["rule"] == "researchers" for c in created_lines)
    assert ended["completed"]["outcome"] == "ok" and ended["completed"]["duration_ms"] > 1000
    assert ended["cancelled"]["outcome"] == "cancelled" and ended["cancelled"]["identity"] == "alice"
    denied = [c for c in calls if c["identity"] == "eve"]
    assert [c["outcome"] for c in denied] == ["denied"]
    # Every task request is a line of its own; bob's, refused, name no tool of alice's.
    assert {c["method"] for c in lines} >= {"tasks/get", "tasks/result", "tasks/cancel"}  # a list names no tool
    bobs = [c for c in log_events(log, "call") if c["identity"] == "bob"]
    assert bobs and all(c["name"] == "" and c["child"] is None for c in bobs)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="/proc, to find the server's process")
async def test_a_task_fails_when_its_server_restarts(tmp_path: Path) -> None:
    config = tasks_config(tmp_path)
    alice = create_token(config, "alice", "research")
    log = tmp_path / "hub.log"
    async with serve_hub_http(config, log) as url, as_person(url, alice) as a:
        task_id = (await create(a, "tides"))["result"]["task"]["taskId"]
        servers = [p.pid for p in descendants(os.getpid()).values() if "server-everything" in p.cmdline]
        assert len(servers) == 1, servers
        os.kill(servers[0], signal.SIGKILL)
        answer = await raw(a, "tasks/result", {"taskId": task_id})  # waits until the task is over
        assert "restarted or went away" in answer["error"]["message"]
        failed = (await raw(a, "tasks/get", {"taskId": task_id}))["result"]
        assert failed["status"] == "failed" and "restarted or went away" in failed["statusMessage"]
    ended = [c for c in log_events(log, "call") if c.get("task_status") == "failed"]
    assert [c["outcome"] for c in ended] == ["task_failed"]


async def modern_update_across(url_a: str, url_b: str, steer: tuple[dict[str, str], dict[str, str]] = ({}, {})) -> None:
    """A 2026-07-28 host over HTTP (one POST per request, `Mcp-Name` = the task id): its task, created through
    replica a, asks a question, which the host finds and answers (tasks/update) through replica b. `steer`: extra
    headers for the requests meant for a and for b (behind a balancer: what sends them there)."""
    from tests.integration.test_http_front import events

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
    }
    async with httpx2.AsyncClient(timeout=WAIT) as http:

        async def send(url: str, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
            routing = {**headers, **steer[url == url_b], "mcp-method": method}
            answer = await http.post(url, json=message, headers={**routing, "mcp-name": name})
            (last,) = [m for m in events(answer) if m.get("id") == 1]
            result: dict[str, Any] = last["result"]
            return result

        call = {"name": TOOL, "arguments": {"topic": "tides", "ambiguous": True}}
        task_id = (await send(url_a, "tools/call", call, TOOL))["taskId"]
        for _ in range(int(WAIT * 2)):  # at the task's pollIntervalMs, as the extension tells a client
            task = await send(url_b, "tasks/get", {"taskId": task_id}, task_id)
            if task.get("inputRequests") or task["status"] != "working":
                break
            await anyio.sleep(task["pollIntervalMs"] / 1000)
        ((key, asked),) = task["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        answer = {"action": "accept", "content": {"interpretation": "ocean tides"}}
        await send(url_b, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}, task_id)
        for _ in range(int(WAIT * 2)):
            task = await send(url_b, "tasks/get", {"taskId": task_id}, task_id)
            if task["status"] != "working" and task["status"] != "input_required":
                break
            await anyio.sleep(task["pollIntervalMs"] / 1000)
        assert task["status"] == "completed", task
        assert "Clarification**: ocean tides" in task["result"]["content"][0]["text"]


async def test_a_task_created_on_one_replica_is_read_and_cancelled_on_another(tmp_path: Path) -> None:
    """Two replicas sharing Redis (`state: {backend: redis}`): a task created through replica a is read, waited for,
    listed, updated (a 2026-07-28 host's answer) and cancelled through replica b; when a stops, b says that a task a
    ran is lost."""
    from tests.integration.test_shared_state import redis_server

    async with redis_server() as redis_url:
        config = shared_config(tmp_path, redis_url)
        log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
        async with serve_hub_http(config, log_b, "--replica-id", "b") as url_b, connect_host(url_b) as on_b:
            async with serve_hub_http(config, log_a, "--replica-id", "a") as url_a, connect_host(url_a) as on_a:
                first = (await create(on_a, "tides"))["result"]["task"]["taskId"]
                assert (await raw(on_b, "tasks/get", {"taskId": first}))["result"]["status"] == "working"
                result = await raw(on_b, "tasks/result", {"taskId": first})
                assert "# Research Report: tides" in result["result"]["content"][0]["text"]

                second = (await create(on_a, "reefs"))["result"]["task"]["taskId"]
                listed = await raw(on_b, "tasks/list", {})
                assert [t["taskId"] for t in listed["result"]["tasks"]] == [first, second]
                cancelled = await raw(on_b, "tasks/cancel", {"taskId": second})
                assert cancelled["result"]["status"] == "cancelled"
                # Replica a, which runs it, cancels it at the server; its answer is the task's result.
                assert "error" in await raw(on_b, "tasks/result", {"taskId": second})
                assert (await raw(on_a, "tasks/get", {"taskId": second}))["result"]["status"] == "cancelled"

                await modern_update_across(url_a, url_b)
                third = (await create(on_a, "storms"))["result"]["task"]["taskId"]
            lost = (await raw(on_b, "tasks/get", {"taskId": third}))["result"]
            assert lost["status"] == "failed" and "replica 'a' that ran the task stopped" in lost["statusMessage"]
    ended = {c["task_status"]: c for c in log_events(log_a, "call") if "task" in c}
    assert ended["completed"]["outcome"] == "ok" and ended["cancelled"]["replica"] == "a"
    assert sorted(c["task_status"] for c in log_events(log_a, "call") if "task" in c) == [
        "cancelled",
        "completed",
        "completed",
        "failed",
    ]
    assert ended["failed"]["outcome"] == "task_failed"
    assert {c["replica"] for c in log_events(log_b, "call")} == {"b"}


async def test_a_tasks_question_reaches_the_session_that_created_it(tmp_path: Path) -> None:
    """The server asks for input during a task (elicitation with `relatedTask`, while the task is input_required):
    with two sessions connected, it reaches the one that created the task, naming the hub's task."""
    config = tasks_config(tmp_path)
    alice = create_token(config, "alice", "research")
    bob = create_token(config, "bob", "research")
    host, other = Host(elicit_answer={"interpretation": "ocean tides"}), Host()
    async with (
        serve_hub_http(config, tmp_path / "hub.log") as url,
        as_person(url, bob, other),
        create_mcp_http_client(headers={"Authorization": f"Bearer {alice}"}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="legacy",
            elicitation_callback=host.on_elicitation,
            read_timeout_seconds=WAIT,
        ) as a,
    ):
        created = await raw(
            a, "tools/call", {"name": TOOL, "arguments": {"topic": "tides", "ambiguous": True}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        result = await raw(a, "tasks/result", {"taskId": task_id})
        assert "Clarification**: ocean tides" in result["result"]["content"][0]["text"]
    assert len(host.elicited) == 1 and not other.elicited
    assert host.elicited[0].meta is not None
    assert host.elicited[0].meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}


async def session_per_replica(url: str, replicas: list[Any]) -> dict[str, str]:
    """A handshake session id on each replica behind the balancer at `url` (an id names its replica), by opening
    sessions until each replica has one: HAProxy has then learned each id (stick store-response)."""
    found: dict[str, str] = {}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "steer", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        for _ in range(20 * len(replicas)):  # leastconn among idle replicas: a few opens each, not a timing
            session = (await http.post(url, json=initialize, headers=headers)).headers["mcp-session-id"]
            found.setdefault(session.partition(".")[0], session)
            if len(found) == len(replicas):
                return found
    raise AssertionError(f"sessions opened only on {sorted(found)}")


async def test_behind_haproxy_a_task_is_read_updated_and_cancelled_through_the_other_replica(tmp_path: Path) -> None:
    """Two replicas on one Redis behind HAProxy (deploy/haproxy.cfg's sticky sessions): tasks created in a session
    served by one replica are read, waited for, listed and cancelled in a session served by the other; a 2026-07-28
    host's task created through one replica is read and updated (its question answered) through the other."""
    from tests.integration.test_replicas import replicas_behind_haproxy
    from tests.integration.test_shared_state import redis_server

    async with redis_server() as redis_url:
        config = shared_config(tmp_path, redis_url)
        async with (
            replicas_behind_haproxy(tmp_path, count=2, config=config) as (url, replicas),
            connect_host(url) as first,
            connect_host(url) as second,
        ):
            # Round robin gives the two sessions one replica each; which is which, the call log says.
            created = (await create(first, "tides"))["result"]["task"]["taskId"]
            other = (await create(first, "reefs"))["result"]["task"]["taskId"]
            assert (await raw(second, "tasks/get", {"taskId": created}))["result"]["taskId"] == created
            serving = {
                r.name: {c["method"] for c in log_events(r.log, "call")} for r in replicas if log_events(r.log, "call")
            }
            assert serving == {replicas[0].name: {"tools/call"}, replicas[1].name: {"tasks/get"}} or serving == {
                replicas[0].name: {"tasks/get"},
                replicas[1].name: {"tools/call"},
            }, serving

            cancelled = await raw(second, "tasks/cancel", {"taskId": other})
            assert cancelled["result"]["status"] == "cancelled"
            listed = await raw(second, "tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [created, other]
            result = await raw(second, "tasks/result", {"taskId": created})
            assert "# Research Report: tides" in result["result"]["content"][0]["text"]
            assert "error" in await raw(second, "tasks/result", {"taskId": other})
            assert (await raw(first, "tasks/get", {"taskId": other}))["result"]["status"] == "cancelled"
            ran_legacy = {c["replica"] for r in replicas for c in log_events(r.log, "call") if "task" in c}

            # A 2026-07-28 host has no session; each of its requests is steered by a session id HAProxy has learned
            # (stick match), which the hub does not read on such a request: creation through r1, the rest via r2.
            sessions = await session_per_replica(url, replicas)
            to_r1, to_r2 = {"mcp-session-id": sessions["r1"]}, {"mcp-session-id": sessions["r2"]}
            await modern_update_across(url, f"{url}?", steer=(to_r1, to_r2))  # "?": the same URL, told apart
    ends = [c for r in replicas for c in log_events(r.log, "call") if "task" in c]
    assert sorted(c["task_status"] for c in ends) == ["cancelled", "completed", "completed"]
    assert len(ran_legacy) == 1, "the replica that created them ran them to their end"
    # A 2026-07-28 request's host session is its own (`http-<hex>`); a handshake session's id names its replica.
    served = {
        r.name: [c["method"] for c in log_events(r.log, "call") if c["host_session"].startswith("http-")]
        for r in replicas
    }
    assert "tools/call" in served["r1"] and "tools/call" not in served["r2"], served
    assert "tasks/update" in served["r2"] and "tasks/update" not in served["r1"], served

"""Three `hub serve --http` replicas behind a real HAProxy (Debian's), in the sticky topology of deploy/haproxy.cfg:
HAProxy learns each session id from the answer that minted it. Every call is answered exactly once, each session's
calls are served by one replica (the call log's `replica`), /metrics of the replicas sum to the calls made, and a
replica killed mid-run costs only its own sessions, with a clear error, after which a new session works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from tests.support.children import python_child
from tests.support.children import write_config as write_servers
from tests.support.mcp_client import connect_host
from tests.support.paths import REPO
from tests.support.processes import serve_http_command, stop_process, wait_listening
from tests.support.system import free_port, system_tool
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SESSIONS, CALLS = 50, 20


@dataclass
class Replica:
    name: str
    port: int
    log: Path
    process: Process
    stats: str  # HAProxy's stats (CSV): whether its health check has the replica UP


def haproxy_config(port: int, stats: int, replicas: list[Replica], sticky: bool = True) -> str:
    """deploy/haproxy.cfg's stickiness (or plain round robin) and health check, on loopback with the replicas."""
    stick = (
        """    stick-table type string len 96 size 10k expire 30m
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)"""
        if sticky
        else ""
    )
    servers = "\n".join(f"    server {r.name} 127.0.0.1:{r.port} check inter 300ms fall 2 rise 1" for r in replicas)
    return f"""
global
    maxconn 2000
    log stdout format raw local0
defaults
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 2m
    timeout server 2m
    retries 3
    option redispatch
    retry-on conn-failure empty-response
frontend mcp
    bind 127.0.0.1:{port}
    default_backend hub
listen stats
    bind 127.0.0.1:{stats}
    stats enable
    stats uri /stats
backend hub
    balance roundrobin
    option http-server-close
{stick}
    option httpchk
    http-check send meth GET uri /readyz
    http-check expect status 200
{servers}
"""


@asynccontextmanager
async def replicas_behind_haproxy(
    tmp: Path, count: int = 3, stateless: bool = False, config: Path | None = None
) -> AsyncIterator[tuple[str, list[Replica]]]:
    """`count` replicas serving `config` (else the kitchen child) behind HAProxy; its URL and the replicas."""
    haproxy = system_tool("haproxy")
    if config is None:
        config = write_servers(
            tmp, {"k": python_child("tests.children.kitchen", "--name", "k")}, {"log_arguments": True}
        )
    front, stats = free_port(), free_port()
    async with AsyncExitStack() as stack:
        replicas = []
        for index in range(1, count + 1):
            port, log = free_port(), tmp / f"r{index}.log"
            # The Host the hosts use is the balancer's: allowed explicitly (DNS-rebinding protection).
            extra = ("--replica-id", f"r{index}", "--allow-host", f"127.0.0.1:{front}", *(["--stateless"] * stateless))
            command = serve_http_command(config, port, log, *extra)
            process = await anyio.open_process(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            replica = Replica(f"r{index}", port, log, process, f"http://127.0.0.1:{stats}/stats;csv")
            stack.push_async_callback(_stop_replica, replica)  # its process then: a test may have restarted it
            replicas.append(replica)
        for replica in replicas:
            await wait_listening(replica.process, replica.port)
        (tmp / "haproxy.cfg").write_text(haproxy_config(front, stats, replicas, sticky=not stateless))
        # HAProxy's log (one line per request, with how it ended) goes to a file, shown when the test fails.
        with (tmp / "haproxy.log").open("wb") as haproxy_log:
            balancer = await anyio.open_process(
                [haproxy, "-db", "-f", str(tmp / "haproxy.cfg")],
                stdout=haproxy_log,
                stderr=subprocess.STDOUT,
            )
        stack.push_async_callback(stop_process, balancer)
        await wait_listening(balancer, front)
        url = f"http://127.0.0.1:{front}/mcp"
        await _until_every_replica_is_checked_ready(replicas)
        try:
            yield url, replicas
        except BaseException:
            lines = (tmp / "haproxy.log").read_text(errors="replace").splitlines()
            print("HAProxy's log, its last 40 lines:", *lines[-40:], sep="\n", file=sys.stderr)
            raise


async def _until_every_replica_is_checked_ready(replicas: list[Replica]) -> None:
    """Until HAProxy's own health check has marked each of `replicas` UP (its stats, as CSV); at most WAIT seconds."""
    async with httpx2.AsyncClient(timeout=5) as http:
        with anyio.fail_after(WAIT):
            while True:
                rows = (await http.get(replicas[0].stats)).text.splitlines()
                header = rows[0].removeprefix("# ").split(",")
                state = {r.split(",")[1]: r.split(",")[header.index("status")] for r in rows[1:] if r.count(",") > 2}
                if all(state.get(replica.name) == "UP" for replica in replicas):
                    return
                await anyio.sleep(0.1)  # a poll of HAProxy's view, bounded above; nothing is assumed of its pace


async def _stop_replica(replica: Replica) -> None:
    await stop_process(replica.process)


def calls_in(replicas: list[Replica]) -> list[dict[str, Any]]:
    lines = []
    for replica in replicas:
        for text in replica.log.read_text().splitlines() if replica.log.exists() else []:
            if text.startswith("{"):
                line = json.loads(text)
                if line.get("event") == "call" and line.get("method") == "tools/call":
                    lines.append(line)
    return lines


def echoed(result: Any) -> str:
    return str(result.content[0].text)


async def test_sessions_stick_to_one_replica_and_a_dead_replica_costs_only_its_own(tmp_path: Path) -> None:
    async with replicas_behind_haproxy(tmp_path) as (url, replicas):

        async def session(index: int) -> None:
            async with connect_host(url) as client:
                for call in range(CALLS):
                    text = f"s{index}-c{call}"
                    assert echoed(await client.call_tool("k_echo", {"text": text})) == text

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for index in range(SESSIONS):
                    tg.start_soon(session, index)

        lines = calls_in(replicas)
        texts = sorted(line["arguments"]["text"] for line in lines)
        expected = sorted(f"s{i}-c{c}" for i in range(SESSIONS) for c in range(CALLS))
        assert texts == expected, "every call answered exactly once"
        served: dict[str, set[str]] = {}
        for line in lines:
            served.setdefault(line["host_session"], set()).add(line["replica"])
            assert line["host_session"].startswith(line["replica"] + "."), "a session id names its replica"
        assert len(served) == SESSIONS and all(len(r) == 1 for r in served.values()), "one replica per session"
        assert len({r for rs in served.values() for r in rs}) == 3, "round robin spread the sessions"

        total = 0.0
        async with httpx2.AsyncClient(timeout=10) as http:
            for replica in replicas:
                text = (await http.get(f"http://127.0.0.1:{replica.port}/metrics")).text
                for family in text_string_to_metric_families(text):
                    for sample in family.samples:
                        if sample.name == "hub_tool_calls_total" and sample.labels.get("tool") == "k_echo":
                            total += sample.value
        assert total == SESSIONS * CALLS, "the replicas' /metrics sum to the calls made"

        await _a_dead_replica_costs_only_its_own_sessions(url, replicas)


async def _a_dead_replica_costs_only_its_own_sessions(url: str, replicas: list[Replica]) -> None:
    async with AsyncExitStack() as stack:
        clients: list[tuple[Client, str]] = []
        for index in range(6):
            client = await stack.enter_async_context(connect_host(url))
            text = f"probe-{index}"
            assert echoed(await client.call_tool("k_echo", {"text": text})) == text
            (line,) = [c for c in calls_in(replicas) if c.get("arguments", {}).get("text") == text]
            clients.append((client, line["replica"]))
        victim = next(r for r in replicas if r.name in {owner for _, owner in clients})
        os.kill(victim.process.pid, signal.SIGKILL)
        with anyio.fail_after(30):
            await victim.process.wait()
        for index, (client, owner) in enumerate(clients):
            if owner == victim.name:
                with pytest.raises(MCPError, match=f"it was opened on replica '{victim.name}'"):
                    await client.call_tool("k_echo", {"text": "after"})
            else:
                assert echoed(await client.call_tool("k_echo", {"text": f"still-{index}"})) == f"still-{index}"
    async with connect_host(url) as fresh:
        assert echoed(await fresh.call_tool("k_echo", {"text": "again"})) == "again", "a new session works"
    survivors = [r for r in replicas if r is not victim]
    (line,) = [c for c in calls_in(survivors) if c.get("arguments", {}).get("text") == "again"]
    assert line["replica"] != victim.name


async def test_a_request_for_another_replicas_session_names_the_owner(tmp_path: Path) -> None:
    """Without a balancer in between: a session id of r1 sent to r2 gets a 404 that says where the session is."""
    config = write_servers(tmp_path, {"k": python_child("tests.children.kitchen", "--name", "k")})
    port = free_port()
    command = serve_http_command(config, port, tmp_path / "r2.log", "--replica-id", "r2")
    process = await anyio.open_process(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_listening(process, port)
        headers = {
            "mcp-session-id": "r1.0123456789abcdef0123456789abcdef",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-11-25",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
        assert answer.status_code == 404
        message = answer.json()["error"]["message"]
        assert "opened on replica 'r1' and this is 'r2'" in message and "Initialize a new session" in message
    finally:
        await stop_process(process)


async def test_stateless_replicas_serve_both_eras_behind_plain_round_robin(tmp_path: Path) -> None:
    async with replicas_behind_haproxy(tmp_path, stateless=True) as (url, replicas):

        async def host(index: int, mode: str) -> None:
            async with connect_host(url, mode=mode) as client:
                assert "k_echo" in {t.name for t in (await client.list_tools()).tools}
                for call in range(10):
                    text = f"{mode}-{index}-{call}"
                    assert echoed(await client.call_tool("k_echo", {"text": text})) == text

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for index in range(5):
                    tg.start_soon(host, index, "legacy")
                    tg.start_soon(host, index, "2026-07-28")
        lines = calls_in(replicas)
        assert len(lines) == 100 and all(line["outcome"] == "ok" for line in lines)
        one_host = {line["replica"] for line in lines if line["arguments"]["text"].startswith("legacy-0-")}
        assert len(one_host) > 1, "a handshake-era host's calls went to several replicas: no session held them"
        async with connect_host(url) as client:  # a child's request to the host: a clear error, never a hang
            with pytest.raises(MCPError, match="did not declare the sampling capability"):
                await client.call_tool("k_sample", {"prompt": "hi"})
        async with httpx2.AsyncClient(timeout=10) as http:
            stream = await http.get(url, headers={"accept": "text/event-stream"})
        assert stream.status_code == 405 and "statelessly" in stream.json()["error"]["message"]


async def test_a_rolling_restart_under_load_fails_no_call_in_flight(tmp_path: Path) -> None:
    """SIGTERM one replica at a time while hosts keep calling: the replica drains (its calls in flight finish,
    /readyz turns 503 so HAProxy stops sending it sessions), exits, and comes back. A host whose session was on it
    is told its session is gone and opens a new one; no call fails."""
    async with replicas_behind_haproxy(tmp_path) as (url, replicas):
        stop = anyio.Event()
        failures: list[str] = []
        done: list[int] = []

        async def worker(index: int) -> None:
            while not stop.is_set():
                phase = "initialize"
                try:
                    async with connect_host(url) as client:
                        while not stop.is_set():
                            phase = "call"
                            result = await client.call_tool("k_progress", {"steps": 3, "delay": 0.05})
                            if result.is_error:
                                failures.append(f"worker {index}: {echoed(result)}")
                            done.append(index)
                            phase = "between calls"
                except (MCPError, BaseExceptionGroup) as error:
                    # A new session may be refused while a replica goes (a draining one refuses it; the balancer
                    # may answer for one that just went): the host opens it again. A call whose session's replica
                    # went is told so, and the host opens a new session. Any other failure of a call is one.
                    expected = ("Session not found", "shutting down")
                    failures.extend(
                        f"worker {index} ({phase}): {m}"
                        for m in _messages(error)
                        if phase == "call" and not m.startswith(expected)
                    )

        with anyio.fail_after(180):
            async with anyio.create_task_group() as tg:
                for index in range(8):
                    tg.start_soon(worker, index)
                for replica in replicas:
                    before = len(done)
                    replica.process.terminate()
                    await replica.process.wait()
                    command = serve_http_command(
                        tmp_path / "servers.yaml",
                        replica.port,
                        replica.log,
                        "--replica-id",
                        replica.name,
                        "--allow-host",
                        url.removeprefix("http://").removesuffix("/mcp"),
                    )
                    replica.process = await anyio.open_process(
                        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                    await wait_listening(replica.process, replica.port)
                    await _until_every_replica_is_checked_ready([replica])
                    assert len(done) > before, "calls went on while the replica restarted"
                stop.set()
        assert failures == []
        drained = [e for r in replicas for e in _events(r.log) if e.get("event") == "hub_drained"]
        assert len(drained) == 3 and not any(e["timed_out"] for e in drained)


def _messages(error: BaseException) -> list[str]:
    """The messages of an error, or of each error in a group (the SDK client's task group wraps them)."""
    if isinstance(error, BaseExceptionGroup):
        return [m for inner in error.exceptions for m in _messages(inner)]
    return [str(error)]


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in log.read_text().splitlines() if t.startswith("{")]

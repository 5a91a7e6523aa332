"""deploy/haproxy.cfg and deploy/nginx.conf in front of real replicas: every handshake-era session stays on the one
replica that created it. Two `hub serve --http` replicas and the real balancer from Debian's packages, all on
loopback ports; the shipped file with only its addresses changed (listen on a free loopback port, the replicas'
loopback ports instead of DNS or example addresses). Each session's calls are found in the call log of exactly one
replica (the log's `host_session` is the Mcp-Session-Id); a session routed elsewhere would get 404 instead.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml

from hub.access.tokens import TokenFile
from tests.deploy.artifacts import DEPLOY, tool
from tests.support.logs import log_events
from tests.support.processes import serve_hub_http, stop_process, wait_listening
from tests.support.system import free_port
from tests.support.waits import WAIT

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

REPLICAS = 2
SESSIONS = 12
CALLS = 4
PROTOCOL = "2025-11-25"


@asynccontextmanager
async def replicas(tmp_path: Path, balancer_port: int) -> AsyncIterator[tuple[list[tuple[int, Path]], list[str]]]:
    """REPLICAS hubs on one configuration and token file (as the pods of one Deployment): their ports and log
    files, and three people's tokens."""
    tokens = TokenFile(tmp_path / "tokens.json")
    people = [tokens.create(name) for name in ("alice", "bob", "carol")]
    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump({"auth": {"tokens": "tokens.json"}, "servers": {}}))
    running: list[tuple[int, Path]] = []
    async with AsyncExitStack() as stack:
        for n in range(REPLICAS):
            port, log = free_port(), tmp_path / f"replica{n}.log"
            # The balancer passes the Host the client used: the balancer's address.
            await stack.enter_async_context(
                serve_hub_http(config, log, "--allow-host", f"127.0.0.1:{balancer_port}", port=port)
            )
            running.append((port, log))
        yield running, people


@asynccontextmanager
async def balancer(argv: list[str], port: int, log: Path) -> AsyncIterator[None]:
    with log.open("wb") as out:
        process = await anyio.open_process(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            await wait_listening(process, port)
            yield
        finally:
            await stop_process(process, grace=10)


def messages(answer: httpx2.Response) -> list[dict[str, Any]]:
    if answer.headers.get("content-type", "").startswith("application/json"):
        return [answer.json()] if answer.content else []
    return [yaml.safe_load(line[5:]) for line in answer.content.splitlines() if line.startswith(b"data:")]


async def one_session(http: httpx2.AsyncClient, url: str, token: str) -> str:
    """initialize, initialized, then CALLS tool calls, each answered; the session's id."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answer = await http.post(
        url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    )
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    headers |= {"mcp-session-id": session, "mcp-protocol-version": PROTOCOL}
    answer = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert answer.status_code == 202, answer.text
    for n in range(CALLS):
        call = {
            "jsonrpc": "2.0",
            "id": n + 2,
            "method": "tools/call",
            "params": {"name": "hub_health", "arguments": {}},
        }
        answer = await http.post(url, headers=headers, json=call)
        assert answer.status_code == 200, f"call {n} of session {session}: {answer.status_code} {answer.text}"
        (message,) = messages(answer)
        assert "result" in message, message
    return session


async def run_sessions(url: str, people: list[str]) -> list[str]:
    sessions: list[str] = []

    async def one(n: int) -> None:
        sessions.append(await one_session(http, url, people[n % len(people)]))

    async with httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            # The first session waits until the balancer has the replicas up (its health checks, nginx's start).
            health = url.removesuffix("/mcp") + "/healthz"
            while (await http.get(health)).status_code != 200:  # noqa: ASYNC110 - other processes; no event exists
                await anyio.sleep(0.1)
            async with anyio.create_task_group() as tg:
                for n in range(SESSIONS):
                    tg.start_soon(one, n)
    return sessions


def served_by(sessions: list[str], logs: list[Path]) -> dict[str, list[int]]:
    """Per session, how many of its calls each replica's call log has."""
    calls = [[e["host_session"] for e in log_events(log, "call") if e.get("method") == "tools/call"] for log in logs]
    return {s: [found.count(s) for found in calls] for s in sessions}


def assert_each_session_on_one_replica(sessions: list[str], logs: list[Path]) -> dict[str, int]:
    assert len(set(sessions)) == SESSIONS
    where: dict[str, int] = {}
    for session, counts in served_by(sessions, logs).items():
        assert sorted(counts) == [0] * (REPLICAS - 1) + [CALLS], f"session {session}: calls per replica {counts}"
        where[session] = counts.index(CALLS)
    return where


async def test_haproxy_keeps_each_session_on_the_replica_that_created_it(tmp_path: Path) -> None:
    haproxy = tool("haproxy")
    port = free_port()
    async with replicas(tmp_path, port) as (running, people):
        config = (DEPLOY / "haproxy.cfg").read_text()
        config = re.sub(r"^(\s*)bind :8080$", rf"\1bind 127.0.0.1:{port}", config, count=1, flags=re.M)
        servers = "\n".join(f"    server hub{n} 127.0.0.1:{p}" for n, (p, _) in enumerate(running))
        config, replaced = re.subn(r"^\s*server-template .*$", servers, config, flags=re.M)
        assert replaced == 1
        path = tmp_path / "haproxy.cfg"
        path.write_text(config)
        async with balancer([haproxy, "-db", "-f", str(path)], port, tmp_path / "haproxy.log"):
            sessions = await run_sessions(f"http://127.0.0.1:{port}/mcp", people)
    where = assert_each_session_on_one_replica(sessions, [log for _, log in running])
    assert set(where.values()) == set(range(REPLICAS)), "new sessions are spread over the replicas"


async def test_nginx_keeps_each_session_on_one_replica(tmp_path: Path) -> None:
    nginx = tool("nginx")
    port = free_port()
    async with replicas(tmp_path, port) as (running, people):
        config = (DEPLOY / "nginx.conf").read_text()
        config = re.sub(r"^(\s*)listen 8080;$", rf"\1listen 127.0.0.1:{port};", config, count=1, flags=re.M)
        config = config.replace("pid /tmp/nginx.pid;", f"pid {tmp_path / 'nginx.pid'};")
        examples = re.findall(r"^\s*server 10\.\S+ .*;$", config, flags=re.M)
        assert len(examples) >= REPLICAS
        for n, line in enumerate(examples):
            replica = f"    server 127.0.0.1:{running[n][0]} max_fails=2 fail_timeout=10s;" if n < REPLICAS else ""
            config = config.replace(line, replica, 1)
        path = tmp_path / "nginx.conf"
        path.write_text(config)
        argv = [nginx, "-c", str(path), "-e", str(tmp_path / "nginx-error.log"), "-g", "daemon off;"]
        async with balancer(argv, port, tmp_path / "nginx.log"):
            sessions = await run_sessions(f"http://127.0.0.1:{port}/mcp", people)
    assert_each_session_on_one_replica(sessions, [log for _, log in running])

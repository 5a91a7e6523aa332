"""A flood of 10,000 `initialize` POSTs from one client cannot lock a real client out, nor grow the hub without
bound.

The flood comes from 127.0.0.2 (loopback, one address), FLOOD_CONCURRENCY requests in flight at once, each opening
a session it never uses: the hub's default limits (hub.http: 100 sessions per client, 1,000 in all) make room by
closing the oldest unused session, so every initialize succeeds and the hub holds at most 100 of them. A real
client at 127.0.0.1 that opened its session before the flood keeps it; a new one initializes and calls a tool after
it, each step within LATENCY_LIMIT. The hub's RSS, sampled all along, stays under RSS_LIMIT.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import anyio
import httpx2
import psutil
import pytest

from tests.fuzz._cases import PREFIX
from tests.fuzz._drive import PROTOCOL, HttpHub, Peak, Session, fuzz_config, http_answers, http_hub

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

FLOOD = 10_000
FLOOD_CONCURRENCY = 32
FLOOD_LIMIT = 180.0  # seconds for the whole flood, on a loaded 2-core machine
LATENCY_LIMIT = 2.0  # seconds for each step of a real client after the flood
RSS_LIMIT = 160 * 1024 * 1024  # the hub starts at ~100 MiB serving HTTP
FLOOD_ADDRESS = "127.0.0.2"


async def call_echo(session: Session, text: str) -> float:
    """A tools/call in `session`; its latency (the answer checked)."""
    started = time.monotonic()
    params = {"name": f"{PREFIX}_echo", "arguments": {"text": text}}
    response = await session.post({"jsonrpc": "2.0", "id": text, "method": "tools/call", "params": params})
    latency = time.monotonic() - started
    answers, problem = http_answers(response.headers.get("content-type", ""), response.content)
    assert response.status_code == 200 and problem is None, (response.status_code, response.content[:300])
    assert answers[0]["result"]["content"][0]["text"] == text, answers
    return latency


async def flood(hub: HttpHub, statuses: Counter[int]) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"'
        + PROTOCOL.encode()
        + b'","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}'
    )
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    transport = httpx2.AsyncHTTPTransport(local_address=FLOOD_ADDRESS)
    limits = httpx2.Limits(max_connections=FLOOD_CONCURRENCY)
    async with httpx2.AsyncClient(transport=transport, limits=limits, timeout=30) as http:
        sent = iter(range(FLOOD))

        async def worker() -> None:
            for _ in sent:
                response = await http.post(hub.url, content=body, headers=headers)
                statuses[response.status_code] += 1

        async with anyio.create_task_group() as tg:
            for _ in range(FLOOD_CONCURRENCY):
                tg.start_soon(worker)


async def test_a_flood_of_initialize_does_not_lock_out_a_real_client(tmp_path: Path) -> None:
    async with (
        http_hub(fuzz_config(tmp_path), tmp_path / "hub.log") as hub,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        before = Session(http, hub.url)
        await before.open()
        await call_echo(before, "before the flood")

        statuses: Counter[int] = Counter()
        peak = Peak(hub.process.pid)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(peak.watch)
            with anyio.fail_after(FLOOD_LIMIT):
                await flood(hub, statuses)
            tg.cancel_scope.cancel()
        took = time.monotonic() - started
        assert hub.alive()
        assert statuses == Counter({200: FLOOD}), f"the flood's answers: {statuses}"

        assert await call_echo(before, "the old session") < LATENCY_LIMIT, "a used session was lost to the flood"
        after = Session(http, hub.url)
        began = time.monotonic()
        await after.open()
        opened = time.monotonic() - began
        called = await call_echo(after, "after the flood")
        memory = psutil.Process(hub.process.pid).memory_info().rss
        print(
            f"{FLOOD} initialize in {took:.1f}s ({FLOOD / took:.0f}/s): {dict(statuses)}; then a new client "
            f"initialized and listed in {opened:.3f}s and called in {called:.3f}s; hub RSS peak "
            f"{peak.bytes >> 20} MiB, after {memory >> 20} MiB"
        )
        assert opened < LATENCY_LIMIT and called < LATENCY_LIMIT
        assert max(peak.bytes, memory) <= RSS_LIMIT, f"the hub's RSS reached {max(peak.bytes, memory) >> 20} MiB"

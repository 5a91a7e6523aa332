"""Fuzzing the Streamable HTTP front: hostile bodies, headers, verbs and raw bytes, and a hostile child behind it.

BATCHES batches of PER_BATCH generated cases (plus, in the first batch, every case the issue names), CONCURRENCY
requests in flight at once, over httpx2 (the SDK's HTTP client) and, for the "raw" cases, over plain sockets. Most
POSTs go to one handshake-era session; others carry no session, or the 2026-07-28 envelope. After each batch:

- no response had a 5xx status, and every body is what its content type says (strict JSON, or SSE of it);
- every request that had a usable id got exactly one answer in its response, under its id (at most one for the
  "transport" cases, which a client can get refused before any JSON-RPC is read), and nothing else was answered;
- the cases that say what their answer must be got it;
- a normal `tools/call` in the session is answered correctly, `/healthz` says ok;
- the hub's RSS is under RSS_LIMIT; its log has no fault and no line over LOG_LINE_LIMIT.

The seed is printed; HUB_FUZZ_SEED=N runs another one.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.fuzz._cases import PREFIX, Case, ChildCases, Gen, HttpCases, named_cases, norm
from tests.fuzz._drive import LOG_LINE_LIMIT, HttpHub, Peak, Session, fuzz_config, http_answers, http_hub

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SEED = int(os.environ.get("HUB_FUZZ_SEED", "16"))
BATCHES = int(os.environ.get("HUB_FUZZ_BATCHES", "10"))
PER_BATCH = 510
CHILD_SHARE = 0.12
CONCURRENCY = 12
# Every request's response, however hostile the request, within this (seconds).
REQUEST_LIMIT = 30.0
# The hub's RSS, sampled all along: it starts at ~100 MiB serving HTTP; a 17 MB body is refused as it arrives.
RSS_LIMIT = 200 * 1024 * 1024
RSS_GROWTH_LIMIT = 16 * 1024 * 1024
SENTINEL_LIMIT = 5.0
# How long a raw case waits for the hub's answer or for it to close the connection (an incomplete request is
# waited for until hub.http.request_timeout, uvicorn's own timeouts aside: the case does not wait that long).
RAW_LIMIT = 2.0


@dataclass
class Outcome:
    status: int = 0
    answers: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    seconds: float = 0.0


async def send(case: Case, session: Session, hub: HttpHub) -> Outcome:
    if case.mode == "raw":
        return await send_raw(case.body, hub.port)
    headers = {k.encode(): v.encode() for k, v in session.headers.items()}
    if case.mode == "none":
        headers.pop(b"mcp-session-id")
    elif case.mode == "modern":
        headers = {b"accept": b"application/json, text/event-stream", b"content-type": b"application/json"}
    for name, value in case.headers.items():
        if value is None:
            headers.pop(name.encode(), None)
        else:
            headers[name.encode()] = value.encode("latin-1")  # bytes as they are: HTTP headers are not all ASCII
    url = f"http://127.0.0.1:{hub.port}{case.path}"
    try:
        response = await session.http.request(case.verb, url, content=case.body, headers=headers)
    except httpx2.RemoteProtocolError as exc:
        return Outcome(0, [], f"the connection broke: {exc}")
    answers, problem = http_answers(response.headers.get("content-type", ""), response.content)
    return Outcome(response.status_code, answers, problem)


async def send_raw(data: bytes, port: int) -> Outcome:
    """Bytes on a connection of their own: the hub answers with an HTTP error, or closes it (bounded)."""
    received = b""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    try:
        await stream.send(data)
        with anyio.move_on_after(RAW_LIMIT):
            while len(received) < 65536 and b"\r\n\r\n" not in received:  # a status line and headers will do
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    break
    finally:
        await stream.aclose()
    status = int(received[9:12]) if received.startswith(b"HTTP/1.1 ") and received[9:12].isdigit() else 0
    return Outcome(status, [], None)


def check(cases: list[Case], outcomes: list[Outcome]) -> list[str]:
    problems = []
    for case, outcome in zip(cases, outcomes, strict=True):
        where = f"{case.kind} ({case.mode}, {case.body[:120]!r})"
        if outcome.status >= 500:
            problems.append(f"{where}: HTTP {outcome.status}")
        if outcome.problem and (case.mode != "raw" or "no response" in outcome.problem):
            problems.append(f"{where}: {outcome.problem}")
        problems += [f"{where}: {problem}" for problem in check_answers(case, outcome)]
    return problems


def check_answers(case: Case, outcome: Outcome) -> list[str]:
    """Each expected id answered once (at most once for a transport case), nothing else under an id; the case's
    own check of its answer."""
    problems = []
    got: Counter[Any] = Counter(norm(a.get("id")) for a in outcome.answers)
    for request_id, n in case.expect.items():
        if got.get(request_id, 0) != n and not (case.mode == "transport" and got.get(request_id, 0) <= n):
            problems.append(f"{got.get(request_id, 0)} answers for id {request_id!r}, expected {n}")
    # An error about the request as a whole (not a message, a batch) has id null.
    problems += [
        f"an answer under id {i!r}, which must get none" for i in got if i not in case.expect and i is not None
    ]
    if case.check is not None and len(case.expect) == 1:
        (request_id,) = case.expect
        mine = [a for a in outcome.answers if norm(a.get("id")) == request_id]
        problem = case.check(mine[0]) if mine else None
        if problem:
            problems.append(problem)
    return problems


async def run_batch(cases: list[Case], session: Session, hub: HttpHub) -> list[Outcome]:
    outcomes: list[Outcome] = [Outcome() for _ in cases]
    limiter = anyio.CapacityLimiter(CONCURRENCY)

    async def one(index: int) -> None:
        async with limiter:
            started = time.monotonic()
            with anyio.move_on_after(REQUEST_LIMIT) as waited:
                outcomes[index] = await send(cases[index], session, hub)
            if waited.cancelled_caught:
                outcomes[index] = Outcome(0, [], f"no response within {REQUEST_LIMIT}s")
            outcomes[index].seconds = time.monotonic() - started

    async with anyio.create_task_group() as tg:
        for index in range(len(cases)):
            tg.start_soon(one, index)
    return outcomes


def make_batch(batch: int, gen: Gen, host_cases: HttpCases, child_cases: ChildCases) -> list[Case]:
    cases = named_cases(gen, "http") if batch == 0 else []
    target = len(cases) + PER_BATCH
    while len(cases) < target:
        cases.append(child_cases.case(gen.uid()) if gen.rng.random() < CHILD_SHARE else host_cases.draw())
    return cases


async def after_batch(batch: int, session: Session, hub: HttpHub) -> None:
    """A normal call in the session, /healthz, and the log."""
    sentinel = f"sentinel-{batch}"
    started = time.monotonic()
    params = {"name": f"{PREFIX}_echo", "arguments": {"text": sentinel}}
    answer = await session.post({"jsonrpc": "2.0", "id": sentinel, "method": "tools/call", "params": params})
    latency = time.monotonic() - started
    answers, problem = http_answers(answer.headers.get("content-type", ""), answer.content)
    assert problem is None and answers[0]["result"]["content"][0]["text"] == sentinel, answer.content[:500]
    assert latency < SENTINEL_LIMIT, f"batch {batch}: a normal call took {latency:.2f}s"
    health = await session.http.get(f"http://127.0.0.1:{hub.port}/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    hub.log.read()
    assert not hub.log.faults, "the hub failed on a message:\n" + "\n".join(hub.log.faults[:5])
    assert hub.log.longest <= LOG_LINE_LIMIT, f"a log line of {hub.log.longest} bytes ({hub.log.longest_event})"


async def test_fuzz_http_front(tmp_path: Path) -> None:
    print(f"fuzz seed {SEED} (HUB_FUZZ_SEED={SEED} reproduces this run)")
    gen = Gen(SEED)
    host_cases = HttpCases(gen)
    child_cases = ChildCases(gen)
    total = 0
    modes: Counter[str] = Counter()
    rss_after: list[int] = []
    began = time.monotonic()
    config = fuzz_config(tmp_path, {"http": {"request_timeout": 5}})
    async with (
        http_hub(config, tmp_path / "hub.log") as hub,
        httpx2.AsyncClient(timeout=REQUEST_LIMIT, limits=httpx2.Limits(max_connections=CONCURRENCY)) as http,
        anyio.create_task_group() as tg,
    ):
        peak = Peak(hub.process.pid)
        tg.start_soon(peak.watch)
        session = Session(http, hub.url)
        await session.open()
        for batch in range(BATCHES):
            cases = make_batch(batch, gen, host_cases, child_cases)
            outcomes = await run_batch(cases, session, hub)
            assert hub.alive(), f"batch {batch}: the hub exited with {hub.process.returncode}"
            problems = check(cases, outcomes)
            assert not problems, f"batch {batch} (seed {SEED}): " + "\n".join(problems[:30])
            await after_batch(batch, session, hub)
            memory = hub.rss()
            rss_after.append(memory)
            assert max(memory, peak.bytes) <= RSS_LIMIT, f"batch {batch}: the hub's RSS reached {peak.bytes >> 20} MiB"
            total += len(cases)
            modes.update(c.mode for c in cases)
            slowest = max(range(len(cases)), key=lambda i: outcomes[i].seconds)
            print(
                f"batch {batch}: {len(cases)} cases, RSS {memory >> 20} MiB, {time.monotonic() - began:.1f}s; slowest "
                f"{outcomes[slowest].seconds:.2f}s: {cases[slowest].kind} {cases[slowest].body[:100]!r}"
            )
        log_bytes = hub.log.offset
        tg.cancel_scope.cancel()
    print(
        f"HTTP front: {total} cases in {BATCHES} batches, {time.monotonic() - began:.1f}s; RSS after each batch "
        f"(MiB): {[m >> 20 for m in rss_after]}, peak {peak.bytes >> 20}; log {log_bytes >> 10} KiB; "
        f"modes {dict(modes)}"
    )
    assert total >= 5000
    assert rss_after[-1] - rss_after[1] <= RSS_GROWTH_LIMIT, f"RSS grew: {[m >> 20 for m in rss_after]} MiB"

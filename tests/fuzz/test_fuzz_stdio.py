"""Fuzzing the stdio front: hostile bytes from the host, hostile lines from a child, one running hub.

BATCHES batches of PER_BATCH generated cases (plus, in the first batch, every case the issue names) are written to
the hub's stdin as raw bytes; its stdout is read by the test. After each batch:

- every request that had a usable id (tests/fuzz/_cases.py says which) got exactly one answer, and nothing else
  was answered; every line the hub wrote is strict JSON-RPC;
- the cases that say what their answer must be (an error code, a result, a failure naming what the child got
  wrong) got it;
- a normal `tools/call` is answered correctly;
- the hub's RSS is under RSS_LIMIT, and its log has no fault (`host_message_failed`, an exception) and no line
  over LOG_LINE_LIMIT.

The seed is printed; HUB_FUZZ_SEED=N runs another one.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fuzz._cases import PREFIX, Case, ChildCases, Gen, HostCases, host_answers, named_cases, norm
from tests.fuzz._drive import BATCH_WAIT, LOG_LINE_LIMIT, STRICT, Peak, StdioHub, fuzz_config, stdio_hub

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SEED = int(os.environ.get("HUB_FUZZ_SEED", "16"))
BATCHES = int(os.environ.get("HUB_FUZZ_BATCHES", "10"))
PER_BATCH = 510
# Of each batch, this share are calls of the hostile child.
CHILD_SHARE = 0.15
# The hub's RSS, sampled all along: it starts at ~80 MiB; a 17 MB line is dropped as it arrives, a 5 MB one decoded.
RSS_LIMIT = 160 * 1024 * 1024
# Growth of the RSS from after the second batch to after the last: nothing a batch leaves behind accumulates.
RSS_GROWTH_LIMIT = 16 * 1024 * 1024
# What the hub may write to its log per case, on average over the run.
LOG_BYTES_PER_CASE = 2048
# A normal call after a batch is answered within this (seconds).
SENTINEL_LIMIT = 5.0


def _cancel_targets(data: bytes) -> set[Any]:
    """Ids named by a well-formed notifications/cancelled in `data`: such a request may go unanswered."""
    found: set[Any] = set()
    for line in data.split(b"\n"):
        if b"notifications/cancelled" not in line:
            continue
        try:
            message = STRICT.decode(line.decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        if type(message) is dict and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            if type(params) is dict and type(params.get("requestId")) in (str, int):
                found.add(norm(params["requestId"]))
    return found


def check_batch(hub: StdioHub, cases: list[Case], before: Counter[Any], relaxed: set[Any]) -> list[str]:
    """Every expected id answered exactly once during the batch, nothing else answered; the cases' own checks."""
    expect: Counter[Any] = Counter()
    for case in cases:
        expect += case.expect
    got = hub.wire.answers - before
    problems = []
    for request_id, n in expect.items():
        count = got.get(request_id, 0)
        if count != n and not (request_id in relaxed and count <= n):
            kinds = [c.kind for c in cases if request_id in c.expect]
            problems.append(f"id {request_id!r} ({', '.join(kinds)}): {count} answers, expected {n}")
    for request_id, count in got.items():
        if request_id not in expect:
            problems.append(f"id {request_id!r}: {count} answers to a message that must get none")
    for case in cases:
        if case.check is not None and len(case.expect) == 1:
            (request_id,) = case.expect
            answers = hub.wire.by_id.get(request_id) or []
            if answers:
                problem = case.check(answers[-1])
                if problem:
                    problems.append(f"{case.kind}: {problem}")
    return problems


def make_batch(batch: int, gen: Gen, host_cases: HostCases, child_cases: ChildCases) -> list[Case]:
    cases = named_cases(gen, "stdio") if batch == 0 else []
    target = len(cases) + PER_BATCH
    while len(cases) < target:
        cases.append(child_cases.case(gen.uid()) if gen.rng.random() < CHILD_SHARE else host_cases.draw())
    return cases


async def run_batch(hub: StdioHub, batch: int, cases: list[Case]) -> None:
    """Write the batch; every expected answer in (bounded), then a normal call; then every check."""
    data = b"".join(case.body + b"\n" for case in cases)
    before = hub.wire.answers.copy()
    relaxed = _cancel_targets(data)
    expect: Counter[Any] = Counter()
    for case in cases:
        expect += case.expect
    with anyio.fail_after(BATCH_WAIT):
        await hub.write(data)
    short = await hub.wait_for(expect, BATCH_WAIT, frozenset(relaxed))
    assert hub.alive(), f"batch {batch}: the hub exited with {hub.process.returncode}"
    assert not short, f"batch {batch}: no answer within {BATCH_WAIT}s for " + "; ".join(
        f"{c.kind}: {c.body[:300]!r}" for c in cases if set(c.expect) & set(short[:10])
    )
    problems = check_batch(hub, cases, before, relaxed)

    sentinel = f"sentinel-{batch}"
    started = time.monotonic()
    answer = await hub.request(sentinel, "tools/call", {"name": f"{PREFIX}_echo", "arguments": {"text": sentinel}})
    latency = time.monotonic() - started
    assert answer.get("result", {}).get("content") == [{"type": "text", "text": sentinel}], answer
    assert latency < SENTINEL_LIMIT, f"batch {batch}: a normal call took {latency:.2f}s"

    assert not problems, f"batch {batch} (seed {SEED}): " + "\n".join(problems[:30])
    assert not hub.wire.bad, f"lines the hub wrote that are not strict JSON-RPC: {hub.wire.bad[:5]}"
    hub.log.read()
    assert not hub.log.faults, "the hub failed on a message:\n" + "\n".join(hub.log.faults[:5])
    assert hub.log.longest <= LOG_LINE_LIMIT, f"a log line of {hub.log.longest} bytes ({hub.log.longest_event})"


async def test_fuzz_stdio_front(tmp_path: Path) -> None:
    print(f"fuzz seed {SEED} (HUB_FUZZ_SEED={SEED} reproduces this run)")
    gen = Gen(SEED)
    host_cases = HostCases(gen, "stdio")
    child_cases = ChildCases(gen, asking=True)
    total = 0
    kinds: Counter[str] = Counter()
    rss_after: list[int] = []
    began = time.monotonic()
    async with (
        stdio_hub(fuzz_config(tmp_path), tmp_path / "hub.log", responder=host_answers(SEED)) as hub,
        anyio.create_task_group() as tg,
    ):
        peak = Peak(hub.pid)
        tg.start_soon(peak.watch)
        hub.log.read()
        for batch in range(BATCHES):
            cases = make_batch(batch, gen, host_cases, child_cases)
            await run_batch(hub, batch, cases)
            memory = hub.rss()
            rss_after.append(memory)
            assert max(memory, peak.bytes) <= RSS_LIMIT, f"batch {batch}: the hub's RSS reached {peak.bytes >> 20} MiB"
            total += len(cases)
            kinds.update(c.kind.split(" ")[0] for c in cases)
            print(f"batch {batch}: {len(cases)} cases, RSS {memory >> 20} MiB, {time.monotonic() - began:.1f}s")
        log_bytes = hub.log.offset
        tg.cancel_scope.cancel()
    print(
        f"stdio front: {total} cases in {BATCHES} batches, {time.monotonic() - began:.1f}s; the hub asked the host "
        f"{hub.wire.asks} things, {hub.replies} answered; RSS after each batch (MiB): "
        f"{[m >> 20 for m in rss_after]}, peak {peak.bytes >> 20}; log {log_bytes >> 10} KiB, longest line "
        f"{hub.log.longest} bytes; kinds {dict(kinds.most_common())}"
    )
    assert total >= 5000
    assert rss_after[-1] - rss_after[1] <= RSS_GROWTH_LIMIT, f"RSS grew: {[m >> 20 for m in rss_after]} MiB"
    assert log_bytes <= LOG_BYTES_PER_CASE * total, f"{log_bytes} bytes of log for {total} cases"

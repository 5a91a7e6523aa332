"""The reproductions of issue 16, one test each: what once ended the hub, went unanswered, or leaked a secret.

Each drives a real `hub serve` (stdio: raw bytes on its stdin; HTTP: httpx2 and raw sockets) in front of the fuzz
suite's hostile child (tests/fuzz/hostile_child.py), or runs `hub check`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
import pytest
import yaml

from tests.fuzz._cases import PREFIX, call_bytes, nested, request_bytes
from tests.fuzz._drive import (
    LOG_LINE_LIMIT,
    HttpHub,
    LogWatch,
    Session,
    StdioHub,
    fuzz_config,
    http_answers,
    http_hub,
    stdio_hub,
)
from tests.support.paths import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WAIT = 30.0
# A log line copied from a request is bounded: fields cut to 1,000 characters (6 bytes each at worst, escaped).
LOG_BYTES_PER_REQUEST = 32 * 1024
SECRETS = ("s3cr3t-TOKEN-value-123", "s3cr3t-env-value-456", "ghp_s3cr3tARGvalue789abcdefghijkl")


# ---- helpers ---------------------------------------------------------------------------------------------------


async def answer_of(hub: StdioHub, line: bytes, request_id: Any) -> dict[str, Any]:
    """Write one raw line; its one answer (bounded wait)."""
    before = hub.wire.answers[request_id]
    await hub.write(line + b"\n")
    short = await hub.wait_for(Counter({request_id: before + 1}), WAIT)
    assert not short, f"no answer for {request_id!r} within {WAIT}s"
    return hub.wire.by_id[request_id][-1]


async def still_serves(hub: StdioHub, text: str = "still here") -> None:
    answer = await hub.request(
        f"check-{time.monotonic_ns()}", "tools/call", {"name": f"{PREFIX}_echo", "arguments": {"text": text}}
    )
    assert answer["result"]["content"] == [{"type": "text", "text": text}], answer
    assert hub.alive()


async def still_serves_http(session: Session, hub: HttpHub) -> None:
    params = {"name": f"{PREFIX}_echo", "arguments": {"text": "still here"}}
    answer = await session.post({"jsonrpc": "2.0", "id": "check", "method": "tools/call", "params": params})
    answers, problem = http_answers(answer.headers.get("content-type", ""), answer.content)
    assert problem is None and answers[0]["result"]["content"][0]["text"] == "still here", answer.content[:300]
    assert hub.alive()


@asynccontextmanager
async def http_session(tmp_path: Path, hub: dict[str, Any] | None = None) -> AsyncIterator[tuple[HttpHub, Session]]:
    async with (
        http_hub(fuzz_config(tmp_path, hub), tmp_path / "hub.log") as served,
        httpx2.AsyncClient(timeout=WAIT) as http,
    ):
        session = Session(http, served.url)
        await session.open()
        yield served, session


async def post_raw(session: Session, body: bytes) -> tuple[int, list[dict[str, Any]]]:
    response = await session.http.post(session.url, content=body, headers=session.headers)
    answers, problem = http_answers(response.headers.get("content-type", ""), response.content)
    assert problem is None, problem
    return response.status_code, answers


def error_code(answer: dict[str, Any]) -> int | None:
    error = answer.get("error")
    return error.get("code") if isinstance(error, dict) else None


MALFORMED = [
    ("wrong jsonrpc version", b'{"jsonrpc":"1.0","id":%b,"method":"ping"}', -32600),
    ("no jsonrpc", b'{"id":%b,"method":"tools/list"}', -32600),
    ("non-string method", b'{"jsonrpc":"2.0","id":%b,"method":["tools/call"]}', -32600),
    ("array params", b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":["fz_echo",{}]}', -32602),
    ("string params", b'{"jsonrpc":"2.0","id":%b,"method":"tools/list","params":"all"}', -32602),
    (
        "1,000-deep params",
        b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"a":'
        + nested(1000, __import__("random").Random(1))
        + b"}}",
        -32602,
    ),
    (
        "5,000-deep params",
        b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":' + b'{"a":' * 5000 + b"0" + b"}" * 5000 + b"}",
        -32602,
    ),
    ("not UTF-8", b'{"jsonrpc":"2.0","id":%b,"method":"tools/\xffcall"}', -32700),
    ("NaN", b'{"jsonrpc":"2.0","id":%b,"method":"ping","params":{"n":NaN}}', -32700),
]


# ---- stdio ---------------------------------------------------------------------------------------------------


async def test_stdio_a_lone_surrogate_in_the_method_is_answered_and_the_hub_lives_on(tmp_path: Path) -> None:
    async with stdio_hub(fuzz_config(tmp_path), tmp_path / "hub.log") as hub:
        escaped = await answer_of(hub, b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', 1)
        assert error_code(escaped) == -32601, escaped
        raw = await answer_of(hub, b'{"jsonrpc":"2.0","id":2,"method":"\xed\xa0\x80"}', 2)  # the same, as bytes
        assert error_code(raw) == -32601, raw
        # Half an emoji in an argument: refused before the child, naming the field (issue 30), with the id kept.
        half = await answer_of(hub, call_bytes("\ud83d", f"{PREFIX}_echo", {"text": "\ud83d"}), "\ud83d")
        assert error_code(half) == -32602 and half["error"]["data"] == {"field": "params.arguments.text"}, half
        await still_serves(hub)


async def test_stdio_a_malformed_request_with_an_id_gets_the_error_the_spec_names(tmp_path: Path) -> None:
    async with stdio_hub(fuzz_config(tmp_path), tmp_path / "hub.log") as hub:
        for n, (what, template, code) in enumerate(MALFORMED):
            answer = await answer_of(hub, template % f'"m-{n}"'.encode(), f"m-{n}")
            assert error_code(answer) == code, f"{what}: {answer}"
        await still_serves(hub)


@pytest.mark.parametrize("depth", [1000, 5000])
async def test_stdio_deep_nesting_without_an_id_is_logged_and_drops_no_other_line(tmp_path: Path, depth: int) -> None:
    """One read carrying a too-deep message between two requests: both requests answered, the deep one logged."""
    async with stdio_hub(fuzz_config(tmp_path), tmp_path / "hub.log") as hub:
        await hub.write(
            request_bytes("before", "ping")
            + b"\n"
            + b"[" * depth
            + b"]" * depth
            + b"\n"
            + request_bytes("after", "ping")
            + b"\n"
        )
        assert not await hub.wait_for(Counter({"before": 1, "after": 1}), WAIT)
        await still_serves(hub)
        hub.log.read()
        text = hub.log.path.read_text()
        assert "nested too deeply" in text and "host_message_dropped" in text


async def test_stdio_a_5_mb_tool_name_writes_a_bounded_log_line(tmp_path: Path) -> None:
    async with stdio_hub(fuzz_config(tmp_path), tmp_path / "hub.log") as hub:
        hub.log.read()
        before = hub.log.path.stat().st_size
        for n in range(3):
            answer = await answer_of(hub, call_bytes(f"big-{n}", "x" * (5 * 1024 * 1024), {}), f"big-{n}")
            assert error_code(answer) == -32602, str(answer)[:300]
            assert len(json.dumps(answer)) < 2048, "the error quotes the name in full"
        await still_serves(hub)
        await anyio.sleep(0.2)  # the log is line-buffered by another process
        grown = hub.log.path.stat().st_size - before
        assert grown < 3 * LOG_BYTES_PER_REQUEST, f"{grown} bytes of log for 3 requests"
        hub.log.read()
        assert hub.log.longest <= LOG_LINE_LIMIT


async def test_calls_that_ended_are_not_kept_until_their_timeout(tmp_path: Path) -> None:
    """3,000 calls with 10 KB of arguments each, in rounds of 100, under a 120 s timeout: the hub's memory does
    not grow with them (it once kept every call, arguments and all, until its deadline came)."""
    async with stdio_hub(fuzz_config(tmp_path, timeout=120), tmp_path / "hub.log") as hub:
        text = "x" * 10_000

        async def round_of(first: int) -> None:
            ids = [f"keep-{n}" for n in range(first, first + 100)]
            await hub.write(b"".join(call_bytes(i, f"{PREFIX}_echo", {"text": text}) + b"\n" for i in ids))
            assert not await hub.wait_for(Counter(dict.fromkeys(ids, 1)), WAIT)

        for first in range(0, 500, 100):  # the hub's own allocations settle
            await round_of(first)
        before = hub.rss()
        for first in range(500, 3500, 100):
            await round_of(first)
        grown = hub.rss() - before
        assert grown < 16 * 1024 * 1024, f"the hub grew by {grown >> 20} MiB over 3,000 calls that all ended"


# ---- HTTP ----------------------------------------------------------------------------------------------------


async def test_http_a_half_emoji_id_is_answered_and_the_hub_lives_on(tmp_path: Path) -> None:
    async with http_session(tmp_path) as (hub, session):
        status, answers = await post_raw(session, call_bytes("\ud83d", f"{PREFIX}_echo", {"text": "ok"}))
        assert status == 200 and answers[0]["id"] == "\ud83d", answers
        assert answers[0]["result"]["content"][0]["text"] == "ok"
        await anyio.sleep(1.5)  # the hub once exited a second after this
        health = await session.http.get(f"http://127.0.0.1:{hub.port}/healthz")
        assert health.status_code == 200
        await still_serves_http(session, hub)


async def test_http_a_malformed_request_with_an_id_gets_the_error_the_spec_names(tmp_path: Path) -> None:
    async with http_session(tmp_path) as (hub, session):
        for n, (what, template, code) in enumerate(MALFORMED):
            status, answers = await post_raw(session, template % f'"m-{n}"'.encode())
            assert 400 <= status < 500, f"{what}: HTTP {status}"
            assert [(a["id"], error_code(a)) for a in answers] == [(f"m-{n}", code)], f"{what}: {answers}"
        await still_serves_http(session, hub)


@pytest.mark.parametrize("depth", [1000, 5000])
async def test_http_a_deep_body_without_an_id_is_a_400(tmp_path: Path, depth: int) -> None:
    async with http_session(tmp_path) as (hub, session):
        status, answers = await post_raw(session, b"[" * depth + b"]" * depth)
        assert status == 400 and [a.get("id") for a in answers] == [None], (status, answers)
        await still_serves_http(session, hub)


async def test_http_half_open_connections_and_slow_bodies_time_out(tmp_path: Path) -> None:
    """Connections that send nothing, half a head, or half a body are closed after hub.http.request_timeout (the
    body one answered 408), while a real client is served."""
    limit = 1.0
    async with http_session(tmp_path, {"http": {"request_timeout": limit}}) as (hub, session):
        head = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n" % hub.port
        head += b"accept: application/json, text/event-stream\r\n"
        sends = {
            "nothing": b"",
            "half a head": head,
            "half a body": head + b"content-length: 100\r\n\r\n" + b'{"jsonrpc":',
        }
        streams = {name: await anyio.connect_tcp("127.0.0.1", hub.port) for name in sends}
        try:
            started = time.monotonic()
            for name, data in sends.items():
                if data:
                    await streams[name].send(data)
            await still_serves_http(session, hub)
            received: dict[str, bytes] = {}
            for name, stream in streams.items():
                got = b""
                with anyio.move_on_after(limit + 5):
                    while True:
                        try:
                            got += await stream.receive()
                        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                            break
                received[name] = got
            elapsed = time.monotonic() - started
        finally:
            for stream in streams.values():
                await stream.aclose()
        assert elapsed < limit + 4, f"the connections were held {elapsed:.1f}s"
        assert received["nothing"] == b"" and received["half a head"] == b"", received
        assert received["half a body"].startswith(b"HTTP/1.1 408"), received["half a body"][:100]


async def test_http_a_body_over_max_request_bytes_is_refused_naming_the_limit(tmp_path: Path) -> None:
    async with http_session(tmp_path, {"max_request_bytes": 65536}) as (hub, session):
        body = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"' + b"n" * 70000 + b'"}}'
        status, answers = await post_raw(session, body)
        assert status == 413 and answers[0]["id"] == "big", (status, answers)
        assert "max_request_bytes" in answers[0]["error"]["message"]
        await still_serves_http(session, hub)


# ---- configuration -------------------------------------------------------------------------------------------


def hub_check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", "check", "--config", str(config), "--wait", "5"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_duplicated_prefix_makes_hub_check_fail_clearly(tmp_path: Path) -> None:
    child = {"command": sys.executable, "args": ["-m", "tests.fuzz.hostile_child"], "cwd": str(REPO), "prefix": "same"}
    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump({"servers": {"one": child, "two": child}}))
    done = hub_check(config)
    assert done.returncode != 0
    assert "prefix 'same'" in done.stderr and "'one'" in done.stderr and "two" in done.stderr, done.stderr


def secret_config() -> dict[str, Any]:
    """A configuration that is wrong exactly where the secrets are."""
    return {
        "servers": {
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": [f"Bearer {SECRETS[0]}"]}},
            "local": {"command": "python", "env": {"API_KEY": {"nested": SECRETS[1]}}, "args": [{"token": SECRETS[2]}]},
        }
    }


def test_a_config_error_never_echoes_a_secret(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump(secret_config()))
    done = hub_check(config)
    assert done.returncode != 0 and "headers.Authorization" in done.stderr, done.stderr
    for secret in SECRETS:
        assert secret not in done.stderr and secret not in done.stdout, f"{secret} echoed: {done.stderr}"


def child_pids(hub_pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(hub_pid).children() if "hostile_child" in " ".join(p.cmdline())]


async def rejected(log: LogWatch, count: int) -> None:
    """Until the log has `count` config_rejected lines (bounded poll: another process writes it)."""
    with anyio.fail_after(WAIT):
        while log.path.read_text().count('"config_rejected"') < count:  # noqa: ASYNC110 - no event: another process
            await anyio.sleep(0.1)


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("empty", ""),
        ("comments only", "# servers.yaml, being written\n# servers:\n"),
        ("no servers key", "hub:\n  watch: true\n"),
        ("half written", "servers:\n  fz:\n    command: [unclosed\n"),
    ],
)
async def test_a_reload_to_a_file_without_servers_is_refused_and_the_children_keep_running(
    tmp_path: Path, what: str, text: str
) -> None:
    config = fuzz_config(tmp_path, {"watch": True})
    good = config.read_text()
    async with stdio_hub(config, tmp_path / "hub.log") as hub:
        before = child_pids(hub.pid)
        assert len(before) == 1
        config.write_text(text)  # the file watch sees it within a second
        await rejected(hub.log, 1)
        os.kill(hub.pid, signal.SIGHUP)  # and a reload asked for
        await rejected(hub.log, 2)
        assert child_pids(hub.pid) == before and psutil.pid_exists(before[0])
        await still_serves(hub)
        config.write_text(good)


async def test_a_rejected_reload_never_logs_a_secret(tmp_path: Path) -> None:
    config = fuzz_config(tmp_path, {"watch": True})
    log_file = tmp_path / "hub.log"
    async with stdio_hub(config, log_file) as hub:
        config.write_text(yaml.safe_dump(secret_config()))
        await rejected(hub.log, 1)
        await still_serves(hub)
    logged = log_file.read_text() + log_file.with_suffix(".err").read_text()
    assert "headers.Authorization" in logged
    for secret in SECRETS:
        assert secret not in logged, f"{secret} is in the log"

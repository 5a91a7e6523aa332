"""A shared hub under load: 20 identities x 5 sessions each, calling for 30 s over HTTP with tokens and policies on.

Every request must be answered exactly once with its own answer (each call echoes a text naming its identity,
session and sequence number), and the call log must never put a request under another identity than the one whose
token opened its session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml

from hub.access.tokens import TokenFile
from tests.support.children import python_child
from tests.support.logs import log_events
from tests.support.mcp_client import initialize_request
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

IDENTITIES = 20
SESSIONS = 5
SECONDS = 30.0
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        message: dict[str, Any] = json.loads(lines[-1])
        return message
    message = response.json()
    return message


async def test_twenty_identities_times_five_sessions_for_thirty_seconds(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    secrets = {f"user{i:02}": tokens.create(f"user{i:02}", (f"team{i % 4}",)) for i in range(IDENTITIES)}
    config = tmp_path / "servers.yaml"
    document = {
        "auth": {"tokens": "tokens.json"},
        "policies": [{"name": f"team{t}", "groups": [f"team{t}"], "allow": ["kitchen_echo"]} for t in range(4)],
        "default_policy": "deny",
        "hub": {"log_arguments": True},
        "servers": {"kitchen": python_child("tests.children.kitchen")},
    }
    config.write_text(yaml.safe_dump(document))
    log = tmp_path / "hub.log"
    sent: dict[str, int] = {}
    answered: dict[str, int] = {}
    owners: dict[str, str] = {}  # session id -> identity that opened it
    async with serve_hub_http(config, log) as url:

        async def person(name: str, slot: int) -> None:
            auth = {**HEADERS, "authorization": f"Bearer {secrets[name]}"}
            async with httpx2.AsyncClient(timeout=WAIT) as http:
                opened = await http.post(url, json=initialize_request(0, name=name), headers=auth)
                assert opened.status_code == 200, opened.text
                session = opened.headers["mcp-session-id"]
                owners[session] = name
                headers = {**auth, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
                key = f"{name}/{slot}"
                sequence = 0
                deadline = time.monotonic() + SECONDS
                while time.monotonic() < deadline:
                    sequence += 1
                    text = f"{key}/{sequence}"
                    sent[key] = sequence
                    call = {
                        "jsonrpc": "2.0",
                        "id": sequence,
                        "method": "tools/call",
                        "params": {"name": "kitchen_echo", "arguments": {"text": text}},
                    }
                    message = answer_of(await http.post(url, json=call, headers=headers))
                    assert message["id"] == sequence, message
                    assert message["result"]["content"][0]["text"] == text, message
                    answered[key] = answered.get(key, 0) + 1

        async with anyio.create_task_group() as tg:
            for name in secrets:
                for slot in range(SESSIONS):
                    tg.start_soon(person, name, slot)
    assert len(answered) == IDENTITIES * SESSIONS
    assert answered == sent, "every request answered exactly once"
    calls = log_events(log, "call")
    assert len(calls) == sum(sent.values())
    crossed = [c for c in calls if owners[c["host_session"]] != c["identity"]]
    assert not crossed, crossed[:3]
    assert all(c["arguments"]["text"].startswith(c["identity"] + "/") for c in calls)
    assert {c["outcome"] for c in calls} == {"ok"}

"""HTTP mode for load balancers and supervisors: /healthz (the hub is up), /readyz (the required children ready, not
draining), and the drain on SIGTERM.

A child that starts only when the test says so (slow_start --gate) makes "not ready yet" an event, not a race; a child
that dies at start keeps /readyz at 503 with its state; a disabled child does not count.
"""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.faults._helpers import KITCHEN, SHUTDOWN_WAIT, fault_child, hub_command
from tests.support.children import write_config
from tests.support.logs import log_events
from tests.support.mcp_client import initialize_request
from tests.support.paths import REPO
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_hub(config: Path, log_file: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        hub_command(config, log_file, "--http", f"127.0.0.1:{port}"),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=SHUTDOWN_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=WAIT)


@dataclass
class Response:
    status_code: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


class Http:
    """A tiny GET client (stdlib: the hub's HTTP front is all we test, not a client library)."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def _get(self, path: str) -> Response:
        try:
            with urllib.request.urlopen(self.base + path, timeout=WAIT) as answer:
                return Response(answer.status, answer.read().decode())
        except urllib.error.HTTPError as answer:
            return Response(answer.code, answer.read().decode())

    async def get(self, path: str) -> Response:
        return await anyio.to_thread.run_sync(self._get, path)


async def get_when_listening(client: Http, process: subprocess.Popen[bytes], path: str) -> Response:
    """Bounded: the hub either listens, dies, or the test fails after WAIT seconds."""
    with anyio.fail_after(WAIT):
        while True:
            assert process.poll() is None, f"hub exited with {process.returncode} before listening"
            try:
                return await client.get(path)
            except (urllib.error.URLError, ConnectionError):
                await anyio.sleep(0.1)


async def poll_until(client: Http, path: str, status: int) -> Response:
    last: Response | None = None
    try:
        with anyio.fail_after(WAIT):
            while True:
                last = await client.get(path)
                if last.status_code == status:
                    return last
                await anyio.sleep(0.1)
    except TimeoutError:
        seen = None if last is None else (last.status_code, last.text)
        raise AssertionError(f"{path} never answered {status} within {WAIT}s; last: {seen}") from None


def states(response: Response) -> dict[str, Any]:
    body = response.json()
    assert isinstance(body.get("servers"), dict), body
    servers: dict[str, Any] = body["servers"]
    return servers


async def test_healthz_at_once_and_readyz_once_every_enabled_child_is_ready(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    servers = {
        "kitchen": KITCHEN,
        "late": fault_child("slow_start", "--gate", str(gate)),
        "off": {**fault_child("exit_on_start"), "enabled": False},
    }
    config = write_config(tmp_path, servers)
    port = free_port()
    with http_hub(config, tmp_path / "hub.log", port) as process:
        client = Http(port)
        healthz = await get_when_listening(client, process, "/healthz")
        assert healthz.status_code == 200, healthz.text
        # "late" waits for the gate: not ready, whatever the speed of the machine.
        not_ready = await client.get("/readyz")
        assert not_ready.status_code == 503, not_ready.text
        assert states(not_ready)["late"] == "starting"
        assert "off" not in states(not_ready) or states(not_ready)["off"] != "ready"
        await anyio.Path(gate).write_text("go")
        ready = await poll_until(client, "/readyz", 200)
        assert states(ready)["kitchen"] == "ready" and states(ready)["late"] == "ready", ready.text
        assert (await client.get("/healthz")).status_code == 200


async def test_readyz_stays_503_naming_a_failed_child_while_healthz_is_200(tmp_path: Path) -> None:
    servers = {"kitchen": KITCHEN, "dies": {**fault_child("exit_on_start"), "max_restarts": 0}}
    config = write_config(tmp_path, servers)
    port = free_port()
    with http_hub(config, tmp_path / "hub.log", port) as process:
        client = Http(port)
        assert (await get_when_listening(client, process, "/healthz")).status_code == 200
        with anyio.fail_after(WAIT):
            while True:
                response = await client.get("/readyz")
                assert response.status_code == 503, response.text
                seen = states(response)
                if seen.get("dies") == "failed" and seen.get("kitchen") == "ready":
                    break
                await anyio.sleep(0.1)
        assert (await client.get("/healthz")).status_code == 200


async def test_readyz_waits_only_for_the_required_children(tmp_path: Path) -> None:
    servers = {
        "kitchen": {**KITCHEN, "required": True},
        "flaky": {**fault_child("exit_on_start"), "max_restarts": 0},
    }
    config = write_config(tmp_path, servers)
    port = free_port()
    with http_hub(config, tmp_path / "hub.log", port) as process:
        client = Http(port)
        await get_when_listening(client, process, "/healthz")
        ready = await poll_until(client, "/readyz", 200)
        assert states(ready)["kitchen"] == "ready"
        assert states(ready)["flaky"] != "ready", "a child nobody marked required does not hold readiness"


async def test_sigterm_drains_calls_in_flight_before_stopping(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"kitchen": KITCHEN})
    log = tmp_path / "hub.log"
    port = free_port()
    marker = tmp_path / "call"
    release = tmp_path / "release"
    results: list[str] = []
    with http_hub(config, log, port) as process:
        client = Http(port)
        await get_when_listening(client, process, "/healthz")
        await poll_until(client, "/readyz", 200)
        status, _, session = await anyio.to_thread.run_sync(_post, port, INITIALIZE, None)
        assert status == 200 and session is not None
        await anyio.to_thread.run_sync(_post, port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "kitchen_wait_for_cancel",
                "arguments": {"marker": str(marker), "seconds": WAIT, "release": str(release)},
            },
        }
        async with anyio.create_task_group() as tg:

            async def in_flight() -> None:
                results.append((await anyio.to_thread.run_sync(_post, port, call, session))[1])

            tg.start_soon(in_flight)
            await wait_for_file(Path(f"{marker}.started"))
            process.terminate()
            draining = await poll_until(client, "/readyz", 503)
            assert draining.json()["draining"] is True
            refused = await anyio.to_thread.run_sync(_post, port, INITIALIZE, None)
            assert refused[0] == 503 and "shutting down" in refused[1]
            release.write_text("done")  # only now may the call in flight end
        assert len(results) == 1 and "released" in results[0], "the call in flight finished"
        assert await anyio.to_thread.run_sync(lambda: process.wait(timeout=SHUTDOWN_WAIT)) == 0
    (started,) = log_events(log, "hub_draining")
    (drained,) = log_events(log, "hub_drained")
    assert started["in_flight"] == 1 and drained["timed_out"] is False


INITIALIZE = initialize_request()


def _post(port: int, body: dict[str, Any], session: str | None) -> tuple[int, str, str | None]:
    """One POST to /mcp: (status, body, the session id the hub gave)."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            return answer.status, answer.read().decode(), answer.headers.get("mcp-session-id")
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read().decode(), None

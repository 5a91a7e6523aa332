"""The official MCP conformance suite against `hub serve --http`, with one unprefixed fixture child behind it:
as a stdio child, as a Streamable HTTP child, and behind a second hub over stdio (so that the hub's stdio front is
held to the suite too: the suite itself only speaks HTTP). Every active scenario must pass in each."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.children import write_config
from tests.support.paths import REPO
from tests.support.processes import serve_http_command
from tests.support.system import free_port

pytestmark = pytest.mark.integration

RUN = REPO / "tests" / "conformance" / "run.sh"
# Installing the suite and node 22 from npm on a fresh machine, then 30 scenarios of a few seconds each.
SUITE_TIMEOUT = 1200
PORT_WAIT = 60.0


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Bounded: the server either listens, dies, or the test fails after PORT_WAIT seconds."""
    deadline = time.monotonic() + PORT_WAIT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"server exited with {process.returncode} before listening on {port}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"nothing listened on port {port} within {PORT_WAIT}s")


@contextmanager
def running(args: list[str], port: int, log: Path) -> Iterator[None]:
    with log.open("wb") as err:
        process = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_for_port(port, process)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def run_suite(url: str, out: Path) -> str:
    if shutil.which("npm") is None:
        pytest.fail("npm is needed to install the conformance suite")
    result = subprocess.run(
        ["bash", str(RUN), url, str(out)], capture_output=True, text=True, timeout=SUITE_TIMEOUT, env={**os.environ}
    )
    assert result.returncode == 0, f"conformance failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def test_every_active_scenario_passes_through_the_hub_with_a_stdio_child(tmp_path: Path) -> None:
    child = {
        "command": sys.executable,
        "args": ["-m", "tests.conformance.fixture_server"],
        "cwd": str(REPO),
        "prefix": "",
    }
    config = write_config(tmp_path, {"conformance": child}, hub={"health_tool": False})
    port = free_port()
    with running(serve_http_command(config, port, tmp_path / "hub.log"), port, tmp_path / "hub.err"):
        output = run_suite(f"http://127.0.0.1:{port}/mcp", tmp_path / "out")
    assert " 0 failed" in output.splitlines()[-1]


def test_every_active_scenario_passes_through_the_hub_with_an_http_child(tmp_path: Path) -> None:
    child_port, port = free_port(), free_port()
    child_cmd = [sys.executable, "-m", "tests.conformance.fixture_server", "--http", f"127.0.0.1:{child_port}"]
    config = write_config(
        tmp_path,
        {"conformance": {"url": f"http://127.0.0.1:{child_port}/mcp", "prefix": ""}},
        hub={"health_tool": False},
    )
    with (
        running(child_cmd, child_port, tmp_path / "child.err"),
        running(serve_http_command(config, port, tmp_path / "hub.log"), port, tmp_path / "hub.err"),
    ):
        output = run_suite(f"http://127.0.0.1:{port}/mcp", tmp_path / "out")
    assert " 0 failed" in output.splitlines()[-1]


def test_every_active_scenario_passes_through_the_stdio_front_of_a_second_hub(tmp_path: Path) -> None:
    """suite -> hub (HTTP front) -> hub (stdio front) -> fixture: both fronts on the path of every scenario."""
    fixture = {
        "command": sys.executable,
        "args": ["-m", "tests.conformance.fixture_server"],
        "cwd": str(REPO),
        "prefix": "",
    }
    inner_dir = tmp_path / "inner"
    inner_dir.mkdir()
    inner = write_config(inner_dir, {"conformance": fixture}, hub={"health_tool": False})
    inner_hub = {
        "command": sys.executable,
        "args": ["-m", "hub", "serve", "--config", str(inner), "--log-file", str(tmp_path / "inner.log")],
        "cwd": str(REPO),
        "prefix": "",
    }
    config = write_config(tmp_path, {"inner": inner_hub}, hub={"health_tool": False})
    port = free_port()
    with running(serve_http_command(config, port, tmp_path / "hub.log"), port, tmp_path / "hub.err"):
        output = run_suite(f"http://127.0.0.1:{port}/mcp", tmp_path / "out")
    assert " 0 failed" in output.splitlines()[-1]

"""One-shot commands run as a user runs them (`python -m hub ...` in a child process): a hung server holds none of
them past its own connect_timeout, a closed stdout ends them quietly, `--json` has the documented schema, and the
options that every command takes also work before the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.children import python_child, write_config
from tests.support.paths import REPO
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration

HUNG_TIMEOUT = 3  # the hung server's connect_timeout
# The requirements, as upper bounds of the whole command (process start to exit), not benchmarks.
CALL_BOUND = 3.0
CHECK_BOUND = HUNG_TIMEOUT + 2.0


def hub(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`hub ARGS...` run to its end, and how long it took (seconds)."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hub", *args], cwd=REPO, capture_output=True, text=True, timeout=WAIT * 2
    )
    return done, time.monotonic() - began


@pytest.fixture
def hung_config(tmp_path: Path) -> Path:
    """kitchen (ready in a moment) beside a server that never answers initialize."""
    return write_config(
        tmp_path,
        {
            "kitchen": python_child("tests.children.kitchen"),
            "hung": {"command": "sleep", "args": ["1000"], "connect_timeout": HUNG_TIMEOUT},
        },
    )


def test_a_call_waits_only_for_its_own_server(hung_config: Path) -> None:
    done, took = hub("call", "kitchen_add", '{"a": 2, "b": 3}', "-c", str(hung_config))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"sum": 5}, "the content once; the same structured content is not repeated"
    assert took < CALL_BOUND, f"hub call took {took:.1f}s beside a hung server"


def test_check_reports_the_hung_server_once_its_own_connect_timeout_has_passed(hung_config: Path) -> None:
    done, took = hub("check", "-c", str(hung_config))
    assert done.returncode == 1
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line}
    assert rows["kitchen"].split()[1] == "ready"
    assert f"did not connect and list within {HUNG_TIMEOUT}s" in rows["hung"], done.stdout
    assert "TimeoutError" not in done.stdout + done.stderr
    assert took < CHECK_BOUND, f"hub check took {took:.1f}s with connect_timeout {HUNG_TIMEOUT}"


def test_check_json_has_the_documented_schema(hung_config: Path) -> None:
    done, _ = hub("check", "--json", "-c", str(hung_config))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert set(report) == {"config", "servers", "ready", "total", "collisions"}
    assert (report["ready"], report["total"], report["config"]) == (1, 2, str(hung_config))
    servers = {s["name"]: s for s in report["servers"]}
    keys = {"name", "state", "tools", "resources", "prompts", "start_ms", "restarts", "error", "quarantined"}
    assert all(set(s) == keys for s in servers.values())
    assert servers["kitchen"]["state"] == "ready" and servers["kitchen"]["error"] is None
    assert servers["hung"]["state"] != "ready"
    assert servers["hung"]["error"] == f"did not connect and list within {HUNG_TIMEOUT}s"


@pytest.fixture
def kitchen_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen")})


def test_call_json_has_the_documented_schema(kitchen_config: Path) -> None:
    done, _ = hub("call", "--json", "kitchen_add", '{"a": 2, "b": 3}', "-c", str(kitchen_config))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "content": [{"type": "text", "text": '{"sum": 5}'}],
        "isError": False,
        "structuredContent": {"sum": 5},
    }
    failed, _ = hub("call", "--json", "kitchen_fail", "-c", str(kitchen_config))
    assert failed.returncode == 1
    assert json.loads(failed.stdout) == {
        "content": [{"type": "text", "text": "kitchen failed on purpose"}],
        "isError": True,
    }
    unknown, _ = hub("call", "--json", "kitchen_nope", "-c", str(kitchen_config))
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout) == {"error": {"code": -32602, "message": "Unknown tool: 'kitchen_nope'"}}


def test_call_errors_are_one_line_on_stderr(kitchen_config: Path) -> None:
    failed, _ = hub("call", "kitchen_fail", "-c", str(kitchen_config))
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr.splitlines()[-1] == "hub: kitchen_fail: kitchen failed on purpose"
    boom, _ = hub("call", "kitchen_boom", "-c", str(kitchen_config))
    assert boom.returncode == 1 and boom.stderr.splitlines()[-1] == "hub: kitchen: boom exploded (code -32603)", (
        boom.stderr
    )


def test_a_validation_error_is_one_line() -> None:
    done, _ = hub("call", "time_get_current_time", "-c", str(REPO / "servers.yaml"))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines == [
        "hub: time_get_current_time: Error executing tool get_current_time: "
        "1 validation error for get_current_timeArguments; timezone: Field required"
    ], done.stderr


def test_a_closed_stdout_ends_the_command_quietly(kitchen_config: Path) -> None:
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "hub", "list", "--json", "-c", str(kitchen_config)],
        cwd=REPO,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    os.close(read_end)  # the reader is gone before the hub writes (`hub list --json | head -c 10`, and more)
    _, err = process.communicate(timeout=WAIT)
    assert process.returncode == 141
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()


def test_options_every_command_takes_also_go_before_it(kitchen_config: Path) -> None:
    done, _ = hub("-c", str(kitchen_config), "--log-level", "error", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert "kitchen_add" in {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    # given after the command too, that one wins
    done, _ = hub("-c", "/nonexistent/servers.yaml", "check", "-c", str(kitchen_config))
    assert done.returncode == 0, done.stderr

"""One-shot commands run as a user runs them (`python -m hub ...` in a child process): a hung server holds none of
them past its own connect_timeout, a closed stdout ends them quietly, `--json` has the documented schema, and the
options that every command takes also work before the command."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from hub.cli.install import CLIENT_NAMES
from tests.integration.test_team import create_token, team_config
from tests.support.children import python_child, write_config
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http, stop_process
from tests.support.system import free_port
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration

HUNG_TIMEOUT = 3  # the hung server's connect_timeout in `hub check`
CALL_HUNG_TIMEOUT = 20  # and in `hub call`, which must not wait for it at all
# The requirements, as upper bounds of the whole command (process start to exit), not benchmarks. On a
# machine so loaded that the ready server alone starts slower than that, the bound is the same command without the
# hung server (plus the hung server's connect_timeout for check): still far below what waiting for it would take.
CALL_BOUND = 3.0
CHECK_BOUND = HUNG_TIMEOUT + 2.0


def hub(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`hub ARGS...` run to its end, and how long it took (seconds)."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hub", *args], cwd=REPO, capture_output=True, text=True, timeout=WAIT * 2
    )
    return done, time.monotonic() - began


def hung_config(directory: Path, connect_timeout: float) -> Path:
    """kitchen (ready in a moment) beside a server that never answers initialize."""
    directory.mkdir(exist_ok=True)
    return write_config(
        directory,
        {
            "kitchen": python_child("tests.children.kitchen"),
            "hung": {"command": "sleep", "args": ["1000"], "connect_timeout": connect_timeout},
        },
    )


def test_a_call_waits_only_for_its_own_server(tmp_path: Path, kitchen_config: Path) -> None:
    call = ("call", "kitchen_add", '{"a": 2, "b": 3}', "-c")
    done, took = hub(*call, str(hung_config(tmp_path / "hung", CALL_HUNG_TIMEOUT)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"sum": 5}, "the content once; the same structured content is not repeated"
    if took >= CALL_BOUND:
        alone = hub(*call, str(kitchen_config))[1]
        assert took < alone + 2.0, f"hub call took {took:.1f}s beside a hung server, {alone:.1f}s without"


def test_check_reports_the_hung_server_once_its_own_connect_timeout_has_passed(
    tmp_path: Path, kitchen_config: Path
) -> None:
    done, took = hub("check", "-c", str(hung_config(tmp_path / "hung", HUNG_TIMEOUT)))
    assert done.returncode == 1
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line}
    assert rows["kitchen"].split()[1] == "ready"
    assert f"did not connect and list within {HUNG_TIMEOUT}s" in rows["hung"], done.stdout
    assert "TimeoutError" not in done.stdout + done.stderr
    if took >= CHECK_BOUND:
        alone = hub("check", "-c", str(kitchen_config))[1]
        assert took < alone + HUNG_TIMEOUT, f"hub check took {took:.1f}s, {alone:.1f}s without the hung server"


def test_list_shows_the_hung_server_once_its_own_connect_timeout_has_passed(
    tmp_path: Path, kitchen_config: Path
) -> None:
    done, took = hub("list", "-c", str(hung_config(tmp_path / "hung", HUNG_TIMEOUT)))
    assert done.returncode == 0, done.stderr
    assert "kitchen_add" in done.stdout
    servers = {line.split()[0]: line.split()[1] for line in done.stdout.split("\n\n")[1].splitlines()[1:] if line}
    assert servers["kitchen"] == "ready" and servers["hung"] != "ready", done.stdout
    if took >= CHECK_BOUND:
        alone = hub("list", "-c", str(kitchen_config))[1]
        assert took < alone + HUNG_TIMEOUT, f"hub list took {took:.1f}s, {alone:.1f}s without the hung server"


def test_a_call_to_the_hung_servers_tool_says_why_as_a_host_reads_it(tmp_path: Path) -> None:
    """The hub answers a host's call to a server that is not up with an isError result naming it (docs/cli.md):
    `hub call` prints it as it prints a tool's error, exit 1, within the server's connect_timeout."""
    config = str(hung_config(tmp_path / "hung", HUNG_TIMEOUT))
    done, took = hub("call", "hung_anything", "-c", config)
    assert done.returncode == 1
    said = done.stdout
    assert said.startswith("tool 'hung_anything' is not available: server 'hung' is unavailable"), said + done.stderr
    assert said.endswith(f"did not connect and list within {HUNG_TIMEOUT}s\n") and said.count("\n") == 1, said
    as_json, _ = hub("call", "--json", "hung_anything", "-c", config)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["isError"] is True
    assert took < WAIT / 2, f"hub call of the hung server's tool took {took:.1f}s"


def test_a_server_cut_short_by_wait_is_still_starting_not_failed(tmp_path: Path) -> None:
    """`hub check --wait 1` beside a server given 20 s: it did not fail within 20 s, the wait ran out first."""
    done, _ = hub("check", "--json", "--wait", "1", "-c", str(hung_config(tmp_path / "hung", CALL_HUNG_TIMEOUT)))
    assert done.returncode == 1
    hung = {s["name"]: s for s in json.loads(done.stdout)["servers"]}["hung"]
    assert hung["state"] == "starting", hung
    assert hung["error"] == f"still starting when --wait 1s ran out (connect_timeout {CALL_HUNG_TIMEOUT}s)", hung


def test_check_json_has_the_documented_schema(tmp_path: Path) -> None:
    config = hung_config(tmp_path / "hung", HUNG_TIMEOUT)
    done, _ = hub("check", "--json", "-c", str(config))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert set(report) == {"config", "servers", "ready", "total", "collisions"}
    assert (report["ready"], report["total"], report["config"]) == (1, 2, str(config))
    servers = {s["name"]: s for s in report["servers"]}
    keys = {"name", "state", "tools", "resources", "prompts", "start_ms", "restarts", "sandbox", "error", "quarantined"}
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


def test_the_hubs_errors_are_one_line_on_stderr_and_a_tools_own_are_its_output(kitchen_config: Path) -> None:
    failed, _ = hub("call", "kitchen_fail", "-c", str(kitchen_config))  # the tool's own error: its words, exit 1
    assert (failed.returncode, failed.stdout) == (1, "kitchen failed on purpose\n")
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


def test_hub_logs_cut_short_by_its_reader_exits_as_every_command_does(tmp_path: Path) -> None:
    """`hub logs | head`: quietly, with 141 (docs/cli.md), as `hub list`; it answered 0."""
    log = tmp_path / "hub.log"
    line = {"event": "call", "level": "info", "timestamp": "2026-12-04T12:00:00Z", "method": "tools/call"}
    log.write_text(
        "".join(json.dumps({**line, "child": "c", "name": f"c_t{i}", "outcome": "ok"}) + "\n" for i in range(50))
    )
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "hub", "logs", str(log)], cwd=REPO, stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    os.close(read_end)
    _, err = process.communicate(timeout=WAIT)
    assert process.returncode == 141, err.decode()
    assert b"Traceback" not in err, err.decode()


def test_options_every_command_takes_also_go_before_it(kitchen_config: Path) -> None:
    done, _ = hub("-c", str(kitchen_config), "--log-level", "error", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert "kitchen_add" in {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    # given after the command too, that one wins
    done, _ = hub("-c", "/nonexistent/servers.yaml", "check", "-c", str(kitchen_config))
    assert done.returncode == 0, done.stderr


def test_the_listing_cost_is_hub_cost_and_hub_token_alone_is_for_bearer_tokens(kitchen_config: Path) -> None:
    """The two commands no longer differ by one letter: `hub tokens` is refused, naming `cost` among the choices."""
    done, _ = hub("tokens", "-c", str(kitchen_config))
    assert done.returncode == 2 and "invalid choice: 'tokens'" in done.stderr and "'cost'" in done.stderr
    cost, _ = hub("cost", "--json", "-c", str(kitchen_config))
    assert cost.returncode == 0 and "kitchen_add" in {t["tool"] for t in json.loads(cost.stdout)["tools"]}


def test_an_unknown_client_is_named_with_the_known_ones() -> None:
    done, _ = hub("install", "nope")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"hub: install: unknown client 'nope'; known clients: {', '.join(CLIENT_NAMES)} (or --status)"
    ]


@pytest.mark.anyio
async def test_reload_over_http_sends_the_admin_token_as_connect_does(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    root = create_token(config, "root", "admin")
    alice = create_token(config, "alice", "oncall")
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        base = url.removesuffix("/mcp")
        env = {k: v for k, v in os.environ.items() if k != "HUB_TOKEN"}

        def reload(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "hub", "reload", "--url", base, *args]
            return subprocess.run(command, cwd=REPO, env=env | extra, capture_output=True, text=True, timeout=WAIT)

        nobody = await anyio.to_thread.run_sync(reload)
        assert nobody.returncode == 1 and "401" in nobody.stderr and "$HUB_TOKEN is not set" in nobody.stderr
        done = await anyio.to_thread.run_sync(lambda: reload("--token-env", "ADMIN_TOKEN", ADMIN_TOKEN=root))
        assert done.returncode == 0, done.stderr
        assert "unchanged" in done.stdout
        default = await anyio.to_thread.run_sync(lambda: reload(HUB_TOKEN=root))
        assert default.returncode == 0, default.stderr
        refused = await anyio.to_thread.run_sync(lambda: reload(HUB_TOKEN=alice))
        assert refused.returncode == 1 and "403" in refused.stderr
        unset = await anyio.to_thread.run_sync(lambda: reload("--token-env", "NOT_SET_HERE"))
        assert unset.returncode == 2 and "$NOT_SET_HERE is not set" in unset.stderr


@pytest.mark.anyio
async def test_serve_http_names_its_url_on_a_terminal(kitchen_config: Path) -> None:
    port = free_port()
    leader, follower = pty.openpty()
    process = await anyio.open_process(
        [sys.executable, "-m", "hub", "serve", "--http", str(port), "-c", str(kitchen_config)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    try:
        with anyio.fail_after(WAIT):
            while b"\n" not in seen.partition(b"hub: serving")[2]:
                seen += await anyio.to_thread.run_sync(os.read, leader, 4096)
    finally:
        await stop_process(process)
        os.close(leader)
    line = seen.partition(b"hub: serving")[2].split(b"\n")[0].decode().strip()
    assert line == f"MCP at http://127.0.0.1:{port}/mcp (Ctrl-C stops)"


def test_a_log_line_on_the_terminal_does_not_run_on_after_the_progress_line(tmp_path: Path) -> None:
    """`hub check` on a terminal beside a hung server: the progress line ("hub: starting hung ...") is erased before
    the warning that the server did not start, which then reads as a line of its own."""
    leader, follower = pty.openpty()
    config = str(hung_config(tmp_path / "hung", HUNG_TIMEOUT))
    process = subprocess.Popen(
        [sys.executable, "-m", "hub", "check", "-c", config],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the pty's other end is closed: the command has ended
                break
            if not chunk:
                break
            seen += chunk
    finally:
        process.wait(timeout=WAIT)
        os.close(leader)
    text = seen.decode(errors="replace")
    assert "hub: starting" in text and "child_exited" in text, text
    for line in text.split("\n"):
        if "child_exited" in line:
            shown = line.rstrip("\r").rpartition("\r")[2]  # what stays visible of the line (a pty ends it "\r\n")
            assert "hub: starting" not in shown and "\x1b[K" in line, repr(line)


def test_a_call_of_the_hubs_own_tools_waits_for_the_servers_they_speak_of(tmp_path: Path) -> None:
    """`hub call hub_search_tools` right after the hub's start found nothing ("0 tools found"): the servers were still
    starting. A hub tool that speaks of every server (search, health) waits for them, as `hub check` does."""
    config = write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen")}, {"exposure": "search"})
    done, _ = hub("call", "hub_search_tools", '{"query": "add two numbers", "limit": 3}', "-c", str(config))
    assert done.returncode == 0, done.stderr
    assert "kitchen_add" in done.stdout.splitlines()[0], done.stdout
    assert done.stdout.count('"tools"') == 1, "the summary and its JSON once; the same structured content not again"
    health, _ = hub("call", "--json", "hub_health", "-c", str(config))
    assert {
        s["name"]: s["state"] for s in health.stdout and json.loads(health.stdout)["structuredContent"]["servers"]
    } == {"kitchen": "ready"}, health.stdout

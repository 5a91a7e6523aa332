"""`hub logs` on the log of a real `hub serve`, and the log file's rotation and reopening.

- A hub logs to `hub.log_file` of its servers.yaml; `hub logs` (a subprocess, as a person runs it) finds that file,
  follows it while calls happen, filters it and sums it up.
- A burst of calls with a small `hub.log_rotate.max_bytes`: every call's line is in exactly one of the rotated files,
  whole, and `hub logs --follow` (running through the rotations) and `hub logs` both see each exactly once.
- SIGHUP after the file was moved away (as logrotate does): the hub begins a new file, and loses no line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream, Process
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError

from hub.logfile import rotated_siblings
from tests.support.children import python_child, write_config
from tests.support.logs import wait_for_log
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import stop_process
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

HUB = [sys.executable, "-m", "hub"]
KITCHEN = python_child("tests.children.kitchen")
TOOLS = {"kitchen_echo", "kitchen_fail"}
BURST = 150
MAX_BYTES = 4096


class Output:
    """What a running process has written to one of its pipes so far; waits for more are bounded."""

    def __init__(self, stream: ByteReceiveStream | None) -> None:
        assert stream is not None
        self.stream = stream
        self.text = ""

    async def until(self, predicate: Callable[[str], bool], what: str, limit: float = WAIT) -> None:
        try:
            with anyio.fail_after(limit):
                while not predicate(self.text):
                    self.text += (await self.stream.receive()).decode()
        except (TimeoutError, anyio.EndOfStream):
            raise AssertionError(f"never saw {what}; got:\n{self.text[-3000:]}") from None

    async def rest(self, limit: float = WAIT) -> str:
        """Everything up to the end of the stream (the process has been told to stop)."""
        with anyio.fail_after(limit):
            try:
                while True:
                    self.text += (await self.stream.receive()).decode()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return self.text


@asynccontextmanager
async def following(*argv: str, cwd: Path) -> AsyncIterator[tuple[Process, Output, Output]]:
    """`hub logs --follow ...`, once it says it is following (its start is then past: calls after it are new);
    stopped on leaving if the test did not stop it."""
    process = await anyio.open_process(
        [*HUB, "logs", "--follow", *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = Output(process.stdout), Output(process.stderr)
        await err.until(lambda t: "Ctrl-C to stop" in t, "hub logs --follow start following")
        yield process, out, err
    finally:
        await stop_process(process)


async def stop_follow(process: Process, out: Output, err: Output) -> None:
    """Ctrl-C: the summary, then exit status 0."""
    process.send_signal(signal.SIGINT)
    await out.rest()
    await err.rest()
    with anyio.fail_after(WAIT):
        status = await process.wait()
    assert status == 0, err.text


async def hub_logs(*argv: str, cwd: Path = REPO) -> tuple[str, str]:
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([*HUB, "logs", *argv], cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode(), done.stderr.decode()


def table(out: str) -> list[list[str]]:
    """The call rows of a table (cells split on runs of 2+ spaces), header excluded, up to the summary."""
    lines = out.split("\n\n")[0].splitlines()
    assert lines[0].split() == ["TIME", "IDENTITY", "CHILD", "NAME", "OUTCOME", "MS", "ERROR"], out
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def summary(text: str) -> dict[str, list[str]]:
    """The summary table: `child name` (or `total`) -> calls, errors, p50, p95."""
    lines = text[text.rindex("CHILD  ") :].splitlines()[1:]
    rows: dict[str, list[str]] = {}
    for line in lines:
        cells = line.split()
        if cells and cells[0] == "total":
            rows["total"] = cells[1:]
        elif len(cells) >= 4:
            rows[f"{cells[0]} {cells[1]}"] = cells[2:]
    return rows


def call_lines(log: Path) -> list[dict[str, Any]]:
    """The call lines of the log and its rotated files, oldest first (every line must be JSON: none was cut)."""
    found = []
    for file in [*rotated_siblings(log), log]:
        for line in file.read_text().splitlines():
            entry = json.loads(line)
            if entry["event"] == "call":
                found.append(entry)
    return found


async def wait_calls(log: Path, count: int) -> list[dict[str, Any]]:
    """Bounded wait until `count` call lines are written (a line follows the host's answer)."""
    with anyio.fail_after(WAIT):
        while True:
            try:
                found = call_lines(log)
            except FileNotFoundError:  # a file renamed by a rotation between listing and reading: look again
                found = []
            if len(found) >= count:
                return found
            await anyio.sleep(0.05)  # another process writes the files; no event exists


async def test_hub_logs_follows_filters_and_sums_up_a_real_run(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"kitchen": KITCHEN}, {"log_file": "logs/hub.log"})
    log = tmp_path / "logs" / "hub.log"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hub", "serve", "--config", str(config)], cwd=REPO
    )
    host = Host()
    async with connect_hub(params, host) as client:
        await wait_for_tools(client, host, TOOLS)
        await wait_for_log(log, "child_ready")  # no --log-file: hub.log_file, relative to servers.yaml
        async with following("-c", str(config), cwd=tmp_path) as follow:
            for i in range(3):
                await client.call_tool("kitchen_echo", {"text": f"echo {i}"})
            for _ in range(2):
                assert (await client.call_tool("kitchen_fail", {})).is_error
            with pytest.raises(MCPError):
                await client.call_tool("nope", {})
            _, out, _ = follow
            await out.until(
                lambda t: t.count("kitchen_echo") == 3 and t.count("kitchen_fail") == 2 and " nope " in t,
                "the six calls followed",
            )
            await stop_follow(*follow)
        calls = await wait_calls(log, 6)

    followed = table(out.text)
    assert [row[2:5] for row in followed] == [
        *[["kitchen", "kitchen_echo", "ok"]] * 3,
        *[["kitchen", "kitchen_fail", "tool_error"]] * 2,
        ["-", "nope", "error"],
    ]
    assert followed[-1][-1] == "Unknown tool: 'nope'"
    durations = sorted(c["duration_ms"] for c in calls if c["name"] == "kitchen_echo")
    expected = {
        "kitchen kitchen_echo": ["3", "0", f"{durations[1]:.2f}", f"{durations[2]:.2f}"],
        "kitchen kitchen_fail": ["2", "2"],
        "- nope": ["1", "1"],
        "total": ["6", "3"],
    }
    shown = summary(out.text)
    assert {k: v[: len(expected[k])] for k, v in shown.items()} == expected

    # The same run read afterwards, from anywhere: the default file is found through servers.yaml.
    out_all, _ = await hub_logs("-c", str(config), cwd=tmp_path)
    assert [row[2:5] for row in table(out_all)] == [row[2:5] for row in followed]
    assert summary(out_all) == shown
    failing, _ = await hub_logs(str(log), "--outcome", "tool_error")
    assert [row[3] for row in table(failing)] == ["kitchen_fail"] * 2
    assert summary(failing)["total"][:2] == ["2", "2"]
    echoed, _ = await hub_logs(str(log), "--tool", "kitchen_e*", "--json")
    assert [json.loads(line) for line in echoed.splitlines()] == [c for c in calls if c["name"] == "kitchen_echo"]
    middle = durations[1]
    slower, _ = await hub_logs(str(log), "--child", "kitchen", "--slower-than", str(middle), "--json")
    assert [json.loads(line)["duration_ms"] for line in slower.splitlines()] == [
        c["duration_ms"] for c in calls if c["child"] == "kitchen" and c["duration_ms"] > middle
    ]
    recent, _ = await hub_logs(str(log), "--since", "1h", "--json")
    assert len(recent.splitlines()) == 6
    after = calls[-1]["timestamp"].replace("Z", "+00:00")
    later, _ = await hub_logs(str(log), "--since", after, "--json")
    assert [json.loads(line)["name"] for line in later.splitlines()] == ["nope"], "at T or later"
    none, _ = await hub_logs(str(log), "--since", "2999-01-01")
    assert none == "no matching calls\n"


async def test_a_burst_across_rotations_logs_every_call_once_and_follow_sees_each_once(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"kitchen": KITCHEN}, {"log_arguments": True, "log_rotate": {"max_bytes": MAX_BYTES, "backups": 500}}
    )
    log = tmp_path / "hub.log"
    host = Host()
    wanted = [f"burst {i:03d}" for i in range(BURST)]
    async with connect_hub(hub_params(config, log), host) as client:
        await wait_for_tools(client, host, TOOLS)
        async with following(str(log), "--json", "--tool", "kitchen_echo", cwd=tmp_path) as follow:
            async with anyio.create_task_group() as tg:
                for text in wanted:
                    tg.start_soon(client.call_tool, "kitchen_echo", {"text": text})
            await wait_calls(log, BURST)
            _, out, err = follow
            await out.until(lambda t: t.count("\n") >= BURST, f"{BURST} lines followed")
            await stop_follow(*follow)

    files = [*rotated_siblings(log), log]
    assert len(files) >= 5, f"only {len(files)} files: the burst did not rotate"
    for file in files:
        assert file.stat().st_size <= MAX_BYTES, f"{file.name} is {file.stat().st_size} bytes"
    logged = Counter(c["arguments"]["text"] for c in call_lines(log))
    assert logged == Counter(wanted), "each call's line exactly once across the files"
    followed = Counter(json.loads(line)["arguments"]["text"] for line in out.text.splitlines())
    assert followed == Counter(wanted), "--follow through every rotation: each line once"
    assert summary(err.text)["kitchen kitchen_echo"][:2] == [str(BURST), "0"], "with --json the summary is on stderr"
    read, _ = await hub_logs(str(log), "--json", "--tool", "kitchen_echo")
    assert Counter(json.loads(line)["arguments"]["text"] for line in read.splitlines()) == Counter(wanted)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP") or not Path("/proc").is_dir(), reason="SIGHUP, and /proc for the pid")
async def test_sighup_begins_a_new_file_after_logrotate_moved_the_old_one(tmp_path: Path) -> None:
    from tests.faults._helpers import hub_pid

    config = write_config(tmp_path, {"kitchen": KITCHEN}, {"log_arguments": True, "log_rotate": {"max_bytes": 0}})
    log = tmp_path / "hub.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        await wait_for_tools(client, host, TOOLS)
        await client.call_tool("kitchen_echo", {"text": "before"})
        await wait_calls(log, 1)
        log.rename(tmp_path / "hub.log.1")  # logrotate's default: move, then signal
        os.kill(hub_pid(config), signal.SIGHUP)
        await wait_for_log(log, "log_file_reopened")
        await client.call_tool("kitchen_echo", {"text": "after"})
        await wait_for_log(log, "call")

    def texts(file: Path) -> list[str]:
        lines = [json.loads(line) for line in file.read_text().splitlines()]
        return [e["arguments"]["text"] for e in lines if e["event"] == "call"]

    assert texts(tmp_path / "hub.log.1") == ["before"]
    assert texts(log) == ["after"]
    both, _ = await hub_logs(str(log), "--json")
    assert [json.loads(line)["arguments"]["text"] for line in both.splitlines()] == ["before", "after"]


async def test_a_desktop_hub_logs_to_the_users_log_directory_and_hub_logs_reads_it_out_of_the_box(
    tmp_path: Path,
) -> None:
    """No log file named anywhere: `hub serve` on stdio (as a desktop host starts it) appends its call log to the
    user's log directory ($XDG_STATE_HOME/hub/log/hub.log on Linux); `hub logs`, with no argument, reads it.
    `hub.log_file: false` turns the file off."""
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(state)}
    config = write_config(tmp_path, {"kitchen": KITCHEN})
    log = state / "hub" / "log" / "hub.log"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hub", "serve", "--config", str(config)], cwd=str(REPO), env=env
    )
    host = Host()
    async with connect_hub(params, host) as client:
        await wait_for_tools(client, host, TOOLS)
        await client.call_tool("kitchen_echo", {"text": "hi"})
        (call,) = await wait_calls(log, 1)
    assert call["name"] == "kitchen_echo" and call["outcome"] == "ok"
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([*HUB, "logs", "--json"], cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(line)["name"] for line in done.stdout.decode().splitlines()] == ["kitchen_echo"]

    # Turned off: no file is written (the hub's stderr is all there is), and hub logs says why it has nothing.
    write_config(tmp_path, {"kitchen": KITCHEN}, {"log_file": False})
    log.unlink()
    host = Host()
    async with connect_hub(params, host) as client:
        await wait_for_tools(client, host, TOOLS)
        assert (await client.call_tool("kitchen_echo", {"text": "hi"})).content
    assert not log.exists()
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([*HUB, "logs", "-c", str(config)], cwd=tmp_path, env=env, check=False)
    assert done.returncode == 1 and "sets hub.log_file: false" in done.stderr.decode()

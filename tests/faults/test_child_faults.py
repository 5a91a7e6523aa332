"""Faulty children next to a healthy kitchen, behind one real `hub serve`: the hub survives, every request gets exactly
one response, the kitchen is undisturbed, and the error text names the cause.

The children are in tests/faults/children; each misbehaves in one way, each test uses its own. They share one hub
(module scope) so that the suite stays fast on two cores and the 20 s slow starter overlaps the other cases; sharing
also shows that one child's fault never disturbs the others.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.faults._helpers import (
    AT_ONCE,
    KITCHEN,
    Hubbed,
    error_text,
    fault_child,
    first_text,
    names_seconds,
    running_hub,
)
from tests.support.children import write_config
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MIB = 1024 * 1024

SERVERS: dict[str, Any] = {
    "kitchen": KITCHEN,
    "dies": {**fault_child("exit_on_start"), "max_restarts": 1},
    "crashy": fault_child("crash_mid_call"),
    "flappy": {**fault_child("flaps", "--every", "1"), "max_restarts": 3},
    "stuck": {**fault_child("hang"), "timeout": 2},
    "globbed": {**fault_child("hang"), "timeout": 60, "tool_timeouts": {"ha*": 1}},
    "slow": {**fault_child("hang"), "timeout": 2, "max_timeout": 5},
    "noisy": fault_child("garbage_stdout"),
    "huge": {**fault_child("big_result"), "max_result_bytes": MIB},
    "whole": fault_child("big_result"),
    "sloth": fault_child("slow_start", "--delay", "20"),
    "flap": {**fault_child("flaps", "--every", "3"), "max_restarts": 2},
    "flap-ok": {**fault_child("flaps", "--every", "4"), "max_restarts": 5},
}
READY = [
    "kitchen_echo",
    "crashy_crash",
    "flappy_echo",
    "stuck_hang",
    "globbed_hang",
    "slow_progress",
    "noisy_echo",
    "huge_big",
    "whole_big",
    "flap_echo",
    "flap-ok_echo",
]


@dataclass
class Shared:
    hub: Hubbed
    early: dict[str, Any]  # hub_health as soon as the kitchen was listed
    early_tools: set[str]
    early_changed: int


@pytest.fixture(scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shared]:
    async with running_hub(tmp_path_factory.mktemp("faults"), SERVERS) as running:
        await running.wait_listing(present=["kitchen_echo"])
        early = await running.health()
        early_tools, early_changed = await running.tool_names(), running.tools_changed()
        await running.wait_listing(present=READY)
        yield Shared(running, early, early_tools, early_changed)


@pytest.fixture
def hub(shared: Shared) -> Hubbed:
    return shared.hub


# ---- a child that exits while starting ------------------------------------------------------------------------


async def test_child_exiting_at_start_ends_failed_with_its_exit_code_and_stderr(hub: Hubbed) -> None:
    state = await hub.wait_server("dies", lambda s: s["state"] == "failed", "failed")
    assert state["restarts"] == 1, f"max_restarts: 1 means one restart before failed: {state}"
    assert state["tools"] == 0
    error = state["last_error"] or ""
    assert "exited with code 3" in error, error
    assert "cannot open /etc/imaginary.conf" in error, f"the stderr tail is part of the error: {error}"
    assert not {n for n in await hub.tool_names() if n.startswith("dies_")}
    report = await hub.health()
    assert set(report) >= {"version", "config", "uptime_s", "servers", "collisions"}
    assert set(state) >= {
        "name",
        "prefix",
        "state",
        "restarts",
        "start_ms",
        "last_error",
        "tools",
        "resources",
        "prompts",
        "uptime_s",
    }
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that crashes in the middle of a call -------------------------------------------------------------


async def test_crash_mid_call_answers_every_call_in_flight_at_once_then_restarts(hub: Hubbed, tmp_path: Path) -> None:
    before = first_text(await hub.call("crashy_pid"))
    marker = tmp_path / "wait"
    results: dict[str, dict[str, Any]] = {}

    async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
        results[key] = await hub.call(name, arguments)

    with anyio.fail_after(AT_ONCE):  # not after a timeout: the default timeout is 120 s
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "wait", "crashy_wait", {"marker": str(marker)})
            # Also a call to the kitchen in flight across the crash: it is not disturbed.
            tg.start_soon(call, "kitchen", "kitchen_progress", {"steps": 3, "delay": 0.2})
            await wait_for_file(Path(f"{marker}.started"))
            tg.start_soon(call, "crash", "crashy_crash", {})
    for key in ("wait", "crash"):
        text = error_text(results[key])
        assert "crashy" in text, text
        assert "exited with code 7" in text, text
        assert "about to crash" in text, f"the stderr tail is in the error: {text}"
    assert first_text(results["kitchen"]) == "done 3"

    # Its tools stay listed while it restarts (calls fail fast meanwhile); then it serves again.
    assert "crashy_echo" in await hub.tool_names()
    state = await hub.wait_server("crashy", lambda s: s["state"] == "ready" and s["restarts"] >= 1, "restarted")
    assert state["last_error"] is None or "exited with code 7" in state["last_error"]
    echoed = await hub.call("crashy_echo", {"text": "back"})
    assert first_text(echoed) == "back" and not echoed.get("isError")
    assert first_text(await hub.call("crashy_pid")) != before, "a new process"
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


async def test_calls_to_a_restarting_child_fail_fast_naming_it(hub: Hubbed) -> None:
    # A child that dies on every call: after the crash it restarts (still listed, calls failing fast).
    with anyio.fail_after(AT_ONCE):
        text = error_text(await hub.call("flappy_echo", {"text": "x"}))
        assert "flappy" in text and "exited with code 5" in text, text
        # Immediately after: either still restarting (fails at once, naming it and its state) or back and
        # dying on this call again. Either way exactly one answer, naming the child, quickly.
        again = error_text(await hub.call("flappy_echo", {"text": "y"}))
        assert "flappy" in again, again
        assert "restarting" in again or "exited with code 5" in again or "starting" in again, again
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that hangs -----------------------------------------------------------------------------------------


async def test_hung_call_times_out_is_cancelled_at_the_child_and_it_keeps_serving(hub: Hubbed, tmp_path: Path) -> None:
    pid = first_text(await hub.call("stuck_pid"))
    marker = tmp_path / "hang"
    with anyio.fail_after(2 + AT_ONCE):
        text = error_text(await hub.call("stuck_hang", {"marker": str(marker)}))
    assert "stuck" in text and names_seconds(text, 2), f"names the child and the timeout: {text}"
    await wait_for_file(marker)
    assert marker.read_text() == "cancelled", "the hub cancelled the request at the child"
    echoed = await hub.call("stuck_echo", {"text": "alive"})
    assert first_text(echoed) == "alive" and not echoed.get("isError")
    assert first_text(await hub.call("stuck_pid")) == pid, "one slow call never kills the child"
    assert (await hub.server("stuck"))["restarts"] == 0
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


async def test_tool_timeouts_override_the_servers_timeout_by_glob(hub: Hubbed, tmp_path: Path) -> None:
    # globbed: timeout 60, tool_timeouts {"ha*": 1}
    marker = tmp_path / "hang"
    with anyio.fail_after(1 + AT_ONCE):  # far below the server's 60 s
        text = error_text(await hub.call("globbed_hang", {"marker": str(marker)}))
    assert "globbed" in text and names_seconds(text, 1), text
    await wait_for_file(marker)
    assert marker.read_text() == "cancelled"
    # A tool the glob does not match keeps the server's timeout: 3 s of sleep succeed.
    slept = await hub.call("globbed_sleep", {"seconds": 3})
    assert first_text(slept) == "slept" and not slept.get("isError"), slept
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


async def test_progress_extends_the_deadline_up_to_max_timeout(hub: Hubbed, tmp_path: Path) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    # slow: timeout 2, max_timeout 5. 6 steps 0.5 s apart: 3 s in all, more than the timeout, but progress
    # keeps moving the deadline.
    done = await hub.call("slow_progress", {"steps": 6, "interval": 0.5}, progress=on_progress)
    assert first_text(done) == "done 6" and not done.get("isError"), done
    assert progress == [1, 2, 3, 4, 5, 6], "progress reached the host"

    # Progress forever: the call ends at start + max_timeout (5 s), long before its 40 steps (20 s).
    marker = tmp_path / "capped"
    progress.clear()
    with anyio.fail_after(5 + AT_ONCE):
        result = await hub.call(
            "slow_progress", {"steps": 40, "interval": 0.5, "marker": str(marker)}, progress=on_progress
        )
    text = error_text(result)
    assert "slow" in text, text
    assert len(progress) < 40
    await wait_for_file(marker)
    assert marker.read_text() == "cancelled"
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that writes non-JSON on stdout -------------------------------------------------------------------


async def test_child_printing_garbage_on_stdout_keeps_working(hub: Hubbed) -> None:
    for i in range(5):
        echoed = await hub.call("noisy_echo", {"text": f"clean {i}"})
        assert first_text(echoed) == f"clean {i}" and not echoed.get("isError"), echoed
    assert (await hub.server("noisy"))["restarts"] == 0
    skipped = hub.events("child_stdout_not_jsonrpc", child="noisy")
    lines = {e.get("line") for e in skipped}
    assert any("Starting garbage_stdout" in str(line) for line in lines), skipped[:3]
    assert any("DEBUG: handling a call" in str(line) for line in lines), skipped[:3]
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that returns 10 MB ----------------------------------------------------------------------------------


async def test_result_over_max_result_bytes_is_refused_with_a_clear_error(hub: Hubbed) -> None:
    with anyio.fail_after(WAIT):
        # The spec says "an error": an isError result or a JSON-RPC error are both one clear answer.
        try:
            text = error_text(await hub.call("huge_big", {"mb": 10}))
        except MCPError as exc:
            text = exc.error.message
    assert "huge" in text, text
    sizes = [int(n.replace(",", "").replace("_", "")) for n in re.findall(r"\d[\d,_]*", text)]
    mentions_size = any(n == MIB or n >= 10 * MIB for n in sizes) or "MiB" in text or "MB" in text
    assert mentions_size, f"the error states the size or the limit: {text}"
    small = await hub.call("huge_big", {"mb": 0.5})
    assert len(first_text(small)) == MIB // 2 and not small.get("isError"), "under the limit still works"
    assert (await hub.server("huge"))["restarts"] == 0
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


async def test_ten_megabyte_result_arrives_whole_under_the_default_limit(hub: Hubbed) -> None:
    result = await hub.call("whole_big", {"mb": 10})
    assert not result.get("isError"), str(result)[:300]
    body = first_text(result)
    assert len(body) == 10 * MIB and body == "x" * (10 * MIB)
    assert (await hub.server("whole"))["restarts"] == 0
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that takes 20 s to start ----------------------------------------------------------------------------


async def test_slow_starting_child_does_not_hold_up_the_others(shared: Shared, hub: Hubbed) -> None:
    # The module's hub: when the kitchen was first listed, the sloth was still in its 20 s sleep.
    sloth = next(s for s in shared.early["servers"] if s["name"] == "sloth")
    assert sloth["state"] == "starting", sloth
    assert not {n for n in shared.early_tools if n.startswith("sloth_")}
    # Then its tools appear, and the host is told.
    await hub.wait_listing(present=["sloth_echo"], limit=WAIT)
    # tools/list_changed after the kitchen's (debounced: it may come just after the listing).
    await hub.host.wait_for(lambda: hub.tools_changed() > shared.early_changed, "tools/list_changed")
    assert first_text(await hub.call("sloth_echo", {"text": "late"})) == "late"
    state = await hub.server("sloth")
    assert state["state"] == "ready" and state["restarts"] == 0 and state["start_ms"] >= 20_000, state
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- a child that flaps -------------------------------------------------------------------------------------------


async def _flap_until(hub: Any, name: str, final: str, calls: int) -> list[dict[str, Any]]:
    """Call NAME_echo over and over; each call answered once, successes echo, errors name the child and the exit.

    After each failed call, wait (bounded) until the child is back (one more restart) or failed.
    """
    results: list[dict[str, Any]] = []
    restarts = (await hub.server(name))["restarts"]
    for i in range(calls):
        with anyio.fail_after(AT_ONCE):
            result = await hub.call(f"{name}_echo", {"text": f"call {i}"})
        results.append(result)
        if not result.get("isError"):
            assert first_text(result) == f"call {i}"
            continue
        text = first_text(result)
        assert name in text and ("exited with code 5" in text or "unavailable" in text), text

        def back_or_failed(s: dict[str, Any], before: int = restarts) -> bool:
            return bool(s["state"] == "failed" or (s["state"] == "ready" and s["restarts"] > before))

        state = await hub.wait_server(name, back_or_failed, "came back or failed")
        restarts = state["restarts"]
        if state["state"] == "failed":
            assert final == "failed", state
            break
    return results


async def test_flapping_child_ends_failed_after_max_restarts_and_leaves_the_listing(hub: Hubbed) -> None:
    results = await _flap_until(hub, "flap", "failed", calls=30)
    state = await hub.server("flap")
    assert state["state"] == "failed", state
    assert state["restarts"] == 2 and "exited with code 5" in (state["last_error"] or ""), state
    ok = [r for r in results if not r.get("isError")]
    assert len(ok) == 6, "3 processes, each answering 2 calls before dying on the third"
    await hub.wait_listing(absent=["flap_echo"])
    # A host that still knows the name is told which server is gone and why, not just "unknown tool".
    gone = await hub.call("flap_echo", {"text": "after"})
    assert gone.get("isError"), gone
    assert "'flap_echo' is not available: server 'flap'" in first_text(gone) and "failed" in first_text(gone)
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


async def test_flapping_child_with_restarts_to_spare_recovers(hub: Hubbed) -> None:
    # flap-ok: --every 4, max_restarts 5. Each process answers 3 calls and dies on its 4th: 8 calls, 2 deaths.
    results = await _flap_until(hub, "flap-ok", "ready", calls=8)
    errors = [r for r in results if r.get("isError")]
    assert len(errors) == 2, errors
    state = await hub.wait_server("flap-ok", lambda s: s["state"] == "ready", "recovered")
    assert state["restarts"] == 2
    assert first_text(await hub.call("flap-ok_echo", {"text": "fine"})) == "fine"
    await hub.assert_kitchen_fine()
    hub.assert_each_request_answered_once()


# ---- `hub check` tells the same truth ----------------------------------------------------------------------------


async def test_hub_check_reports_the_failed_child_with_its_exit_code_and_stderr(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"kitchen": KITCHEN, "dies": {**fault_child("exit_on_start"), "max_restarts": 0}})
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-m", "hub", "check", "--config", str(config)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=WAIT * 2,
        )
    )
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert rows["kitchen"].split()[1] == "ready", done.stdout
    assert rows["dies"].split()[1] == "failed", done.stdout
    assert "exited with code 3" in rows["dies"] and "cannot open /etc/imaginary.conf" in rows["dies"], done.stdout


async def test_a_session_connection_that_does_not_connect_in_time_says_so(tmp_path: Path) -> None:
    """A `sessions: per-host` child whose connection for this session does not answer within connect_timeout: the
    call fails naming the wait, not an empty reason. The shared connection starts (the gate is there), then the gate
    is taken away, so the session's own process never answers."""
    gate = tmp_path / "gate"
    gate.touch()
    lane = {**fault_child("slow_start", "--gate", str(gate)), "sessions": "per-host", "connect_timeout": 3}
    config = write_config(tmp_path, {"lane": lane})
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"lane_echo"})  # the shared connection is up (retried if it was slow)
        gate.unlink()
        result = await client.call_tool("lane_echo", {"text": "hi"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "this session's connection failed: did not connect within 3s" in text, text

"""Hot reload while calls are in flight: added children start, removed ones stop, changed ones restart, unchanged ones
are not touched (their calls finish); the host hears list_changed. An invalid file is rejected and changes nothing.

Triggers: the file watch (on by default), SIGHUP, and `hub reload --pid PID`. A new file is written atomically
(written aside, then renamed over the old one), as editors and config management do, so the hub never reads half.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from hub.config import ConfigError, load_config
from tests.faults._helpers import KITCHEN, Hubbed, error_text, fault_child, first_text, hub_pid, running_hub
from tests.support.paths import REPO
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def rewrite(config: Path, servers: dict[str, Any], hub: dict[str, Any] | None = None) -> None:
    tmp = config.with_name(config.name + ".new")
    tmp.write_text(yaml.safe_dump({"hub": hub or {}, "servers": servers}, sort_keys=False))
    os.replace(tmp, config)


def rewrite_text(config: Path, text: str) -> None:
    tmp = config.with_name(config.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, config)


async def _pid_of(hub: Hubbed, name: str) -> str:
    result = await hub.call(f"{name}_pid")
    assert not result.get("isError"), result
    return first_text(result)


async def test_reload_adds_removes_and_changes_children_while_calls_are_in_flight(tmp_path: Path) -> None:
    before = {
        "keep": fault_child("hang"),
        "gone": fault_child("hang"),
        "change": fault_child("hang", env={"FLAVOR": "old"}),
    }
    after = {
        "keep": fault_child("hang"),
        "change": fault_child("hang", env={"FLAVOR": "new"}),
        "fresh": KITCHEN,
    }
    async with running_hub(tmp_path, before, ready=["keep_gate", "gone_gate", "change_gate"]) as hub:
        pids = {name: await _pid_of(hub, name) for name in ("keep", "change")}
        release = tmp_path / "release"
        results: dict[str, dict[str, Any]] = {}

        async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
            results[key] = await hub.call(name, arguments)

        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as tg:
                # In flight across the reload: one call on each of the unchanged, removed and changed children.
                for name in ("keep", "gone", "change"):
                    tg.start_soon(call, name, f"{name}_gate", {"path": str(release), "marker": str(tmp_path / name)})
                    await wait_for_file(tmp_path / f"{name}.started")
                changed_before = hub.tools_changed()
                rewrite(hub.config, after)  # picked up by the file watch
                await hub.wait_listing(present=["fresh_echo"], absent=["gone_echo", "gone_gate"])
                # The host is told with tools/list_changed (debounced: it may come just after the listing).
                await hub.host.wait_for(lambda: hub.tools_changed() > changed_before, "tools/list_changed")
                # The calls on the removed and changed children were answered (their process is gone) ...
                with anyio.fail_after(WAIT):
                    while not {"gone", "change"} <= set(results):  # noqa: ASYNC110 - set by sibling tasks
                        await anyio.sleep(0.05)
                # ... while the unchanged child's call is still running; it finishes once released.
                assert "keep" not in results, results.get("keep")
                await anyio.Path(release).write_text("go")
        assert first_text(results["keep"]) == "released" and not results["keep"].get("isError")
        for name in ("gone", "change"):
            text = error_text(results[name])
            assert name in text, text
        assert await _pid_of(hub, "keep") == pids["keep"], "the unchanged child was not touched"
        await hub.wait_server("change", lambda s: s["state"] == "ready", "ready again")
        assert await _pid_of(hub, "change") != pids["change"], "the changed child was restarted"
        assert first_text(await hub.call("fresh_echo", {"text": "new"})) == "new"
        names = {s["name"] for s in (await hub.health())["servers"]}
        assert "gone" not in names or (await hub.server("gone"))["state"] == "stopped"
        reloaded = hub.events("config_reloaded")
        assert reloaded, "the reload is logged"
        hub.assert_each_request_answered_once()


async def test_sighup_and_the_reload_command_reload_when_the_file_watch_is_off(tmp_path: Path) -> None:
    async with running_hub(tmp_path, {"kitchen": KITCHEN}, {"watch": False}, ready=["kitchen_echo"]) as hub:
        pid = hub_pid(hub.config)
        # SIGHUP: a child is added.
        rewrite(hub.config, {"kitchen": KITCHEN, "extra": fault_child("hang")}, {"watch": False})
        changed_before = hub.tools_changed()
        os.kill(pid, signal.SIGHUP)
        await hub.wait_listing(present=["extra_echo"])
        # The listing can show it before the (debounced) notification is out: wait for that too, bounded.
        await hub.host.wait_for(lambda: hub.tools_changed() > changed_before, "tools/list_changed")
        assert first_text(await hub.call("extra_echo", {"text": "hup"})) == "hup"
        # `hub reload --pid PID`: it is removed again.
        rewrite(hub.config, {"kitchen": KITCHEN}, {"watch": False})
        changed_before = hub.tools_changed()
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys.executable, "-m", "hub", "reload", "--pid", str(pid)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=WAIT,
            )
        )
        assert done.returncode == 0, done.stderr
        await hub.wait_listing(absent=["extra_echo"])
        await hub.host.wait_for(lambda: hub.tools_changed() > changed_before, "tools/list_changed")
        await hub.assert_kitchen_fine()
        hub.assert_each_request_answered_once()


async def test_an_invalid_file_is_rejected_and_the_running_config_stays(tmp_path: Path) -> None:
    servers = {"kitchen": KITCHEN, "stuck": fault_child("hang")}
    async with running_hub(tmp_path, servers, ready=["kitchen_echo", "stuck_echo"]) as hub:
        listing = await hub.tool_names()
        stuck_pid = await _pid_of(hub, "stuck")
        bad = "servers:\n  kitchen:\n    comand: python\n"
        rewrite_text(hub.config, bad)
        # The message the same file gets at start.
        with pytest.raises(ConfigError) as at_start:
            load_config(hub.config)
        expected = str(at_start.value)
        assert "comand" in expected
        rejected = await hub.wait_event("config_rejected")
        assert any(isinstance(v, str) and expected in v for v in rejected.values()), (expected, rejected)
        # Also on SIGHUP: rejected again, nothing changes.
        count = len(hub.events("config_rejected"))
        os.kill(hub_pid(hub.config), signal.SIGHUP)
        with anyio.fail_after(WAIT):
            while len(hub.events("config_rejected")) <= count:  # noqa: ASYNC110 - the hub's log file
                await anyio.sleep(0.1)
        assert await hub.tool_names() == listing
        assert await _pid_of(hub, "stuck") == stuck_pid, "nothing was restarted"
        await hub.assert_kitchen_fine()
        assert not hub.events("config_reloaded")
        # A valid file afterwards is applied as usual.
        rewrite(hub.config, {**servers, "extra": fault_child("hang")})
        await hub.wait_listing(present=["extra_echo"])
        hub.assert_each_request_answered_once()

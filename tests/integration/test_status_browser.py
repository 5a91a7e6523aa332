"""The status page in a real browser: Debian's Chromium, driven by Playwright (its Python package only; it never
downloads a browser of its own here), on a real `hub serve --http` with two kitchen children and real calls.

The page loads with each child, its state and the calls made; a call made afterwards, a child killed (restarting,
with the restart counted and why it ended) and the same child back (ready) all show up without the page being
reloaded (a mark set in the window survives); the strict CSP refuses nothing; on a phone's viewport the page is no
wider than the screen (the tables scroll inside it). With `auth:`, the browser signs in with a token through the
form, the cookie carries the live updates, and once the token is revoked the page says it stopped updating.

Screenshots are kept as test artifacts in `tests/artifacts/status-page/` (git ignores it; `HUB_TEST_ARTIFACTS`
names another directory): `desktop-restarting.png`, `desktop-ready.png`, `phone.png` (390x844), `signed-out.png`.

Skipped when Chromium or Playwright is missing, unless `CI` is set: then it fails (.ci/run installs both).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.faults._helpers import descendants
from tests.integration.test_team import create_token, hub_token
from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not Path("/proc").is_dir(), reason="/proc, to find a child")]

CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("HUB_TEST_ARTIFACTS") or REPO / "tests" / "artifacts") / "status-page"
PHONE = {"width": 390, "height": 844}


def browser_or_skip() -> str:
    """Chromium's path; skips (or fails, in CI) when it or Playwright is not installed."""
    missing = []
    if not CHROMIUM.exists():
        missing.append("Chromium (apt-get install chromium)")
    if importlib.util.find_spec("playwright") is None:
        missing.append("Playwright (pip install -e '.[test]')")
    if missing:
        message = " and ".join(missing) + " missing: the status page's browser test cannot run"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(CHROMIUM)


def child_pid(name: str) -> int:
    """The pid of the kitchen child started with `--name NAME` under this test process."""
    found = [p.pid for p in descendants(os.getpid()).values() if p.cmdline.endswith(f"--name {name}")]
    assert len(found) == 1, f"one process for child {name!r}, found {found}"
    return found[0]


async def test_the_status_page_follows_calls_and_a_child_that_dies_and_comes_back(tmp_path: Path) -> None:
    chromium = browser_or_skip()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT * 1000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    gate = tmp_path / "beta.gate"  # beta (re)starts only while it exists
    gate.touch()
    config = write_config(
        tmp_path,
        {
            "alpha": python_child("tests.children.kitchen", "--name", "alpha"),
            "beta": python_child("tests.faults.children.gated", str(gate), "tests.children.kitchen", "--name", "beta"),
        },
    )
    host = Host()
    async with (
        serve_hub_http(config, tmp_path / "hub.log") as url,
        connect_host(url, host) as client,
        async_playwright() as playwright,
    ):
        await wait_for_tools(client, host, {"alpha_echo", "beta_echo"})
        for text in ("one", "two"):
            assert not (await client.call_tool("alpha_echo", {"text": text})).is_error
        assert (await client.call_tool("alpha_fail", {})).is_error
        assert not (await client.call_tool("beta_add", {"a": 1, "b": 2})).is_error
        with pytest.raises(Exception, match="boom exploded"):
            await client.call_tool("beta_boom", {})

        browser = await playwright.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            answer = await page.goto(url.removesuffix("/mcp") + "/")
            assert answer is not None and answer.ok
            alpha, beta = page.locator('tr[data-server="alpha"]'), page.locator('tr[data-server="beta"]')
            await expect(alpha).to_have_attribute("data-state", "ready")
            await expect(beta).to_have_attribute("data-state", "ready")
            await expect(page.locator('tr[data-call="alpha_echo"]')).to_have_count(2)
            await expect(page.locator('tr[data-call="alpha_fail"]')).to_have_attribute("data-outcome", "tool_error")
            await expect(page.locator('tr[data-call="beta_add"]')).to_have_attribute("data-outcome", "ok")
            await expect(page.locator('tr[data-call="beta_boom"]')).to_have_attribute("data-outcome", "error")
            await expect(page.locator('tr[data-call="beta_boom"]')).to_contain_text("boom exploded")
            await expect(page.locator('tr[data-activity="alpha"] .calls')).to_have_text("3")
            await expect(page.locator('tr[data-activity="alpha"] .errors')).to_have_text("1 (33%)")
            await page.evaluate("window.notReloaded = true")

            # A call made now shows up on the page as it is.
            assert not (await client.call_tool("alpha_echo", {"text": "later"})).is_error
            await expect(page.locator('tr[data-call="alpha_echo"]')).to_have_count(3)

            # beta dies; its restart waits for the gate: the page shows it restarting, and why its run ended.
            gate.unlink()
            os.kill(child_pid("beta"), signal.SIGKILL)
            await expect(beta).to_have_attribute("data-state", "restarting")
            await expect(beta.locator(".restarts")).to_have_text("1")
            await expect(beta.locator(".error")).to_contain_text(re.compile(r"server 'beta' closed the connection"))
            await expect(alpha).to_have_attribute("data-state", "ready")
            await page.screenshot(path=ARTIFACTS / "desktop-restarting.png", full_page=True)

            gate.touch()
            await expect(beta).to_have_attribute("data-state", "ready")
            await expect(beta.locator(".restarts")).to_have_text("1")
            await expect(page.locator("p.summary")).to_contain_text("2/2 servers ready")
            assert await page.evaluate("window.notReloaded === true"), "the page was reloaded"
            await page.screenshot(path=ARTIFACTS / "desktop-ready.png", full_page=True)
            assert problems == [], problems  # the CSP refused nothing, the script threw nothing

            await phone_view(browser, page.url)
        finally:
            await browser.close()


async def phone_view(browser: Any, url: str) -> None:
    """The page at a phone's size: every section there, no wider than the screen, the tables scrolling inside."""
    from playwright.async_api import expect

    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    try:
        page = await context.new_page()
        await page.goto(url)
        await expect(page.locator("tr[data-server]")).to_have_count(2)
        assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        widest = await page.evaluate("Math.max(...[...document.querySelectorAll('.scroll')].map(e => e.scrollWidth))")
        assert widest > PHONE["width"], "the calls table is wider than a phone: it scrolls inside its box"
        await page.screenshot(path=ARTIFACTS / "phone.png", full_page=True)
    finally:
        await context.close()


async def test_a_browser_signs_in_with_a_token_and_is_stopped_when_it_is_revoked(tmp_path: Path) -> None:
    chromium = browser_or_skip()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT * 1000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "servers.yaml"
    document = {
        "auth": {"tokens": "tokens.json"},
        "servers": {"alpha": python_child("tests.children.kitchen", "--name", "alpha")},
    }
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    token = create_token(config, "olga", "status")
    async with serve_hub_http(config, tmp_path / "hub.log") as url, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium)
        try:
            page = await browser.new_page()
            answer = await page.goto(url.removesuffix("/mcp") + "/")
            assert answer is not None and answer.status == 401
            await page.fill("#token", token)
            await page.click("button[type=submit]")
            await expect(page.locator('tr[data-server="alpha"]')).to_have_attribute("data-state", "ready")
            cookies = await page.context.cookies()
            assert [(c["name"], c["httpOnly"], c["secure"], c["sameSite"]) for c in cookies] == [
                ("hub_token", True, True, "Strict")
            ]
            shown = await page.locator(".updated").text_content()
            await expect(page.locator(".updated")).not_to_have_text(shown or "")  # a live update, by the cookie
            await page.evaluate("window.notReloaded = true")
            assert hub_token(config, "revoke", "olga").returncode == 0
            await expect(page.locator("#conn")).to_have_text("Not updating (HTTP 401: reload the page to sign in).")
            assert await page.evaluate("window.notReloaded === true")
            await page.screenshot(path=ARTIFACTS / "signed-out.png", full_page=True)
            await page.reload()
            await expect(page.locator("#token")).to_be_visible()
            await expect(page.locator("main")).to_contain_text("no longer valid")
        finally:
            await browser.close()

"""OAuth from the hub to an HTTP child, per identity: each person signs in once, in a browser; the hub keeps the
tokens encrypted, refreshes them, and keeps them across a restart; nobody's token reaches another's calls, and the
hub's own inbound tokens never reach the child.

Real parts: the `tickets` child (tests/children/tickets.py: the SDK's MCPServer as a protected resource with the
SDK's own authorization-server routes), a real `hub serve --http`, the real `hub auth` command, and the SDK's
client as each person's host. The browser is httpx following the redirects by hand, choosing the account on the
authorization server's consent page as a person would.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import yaml
from anyio.abc import Process

from tests.integration.test_docs import blocks, commands
from tests.integration.test_team import as_person, create_token
from tests.support.logs import log_events
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http, stop_process
from tests.support.waits import WAIT, wait_for_file

pytestmark = pytest.mark.anyio

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/oauth/start\?link=[A-Za-z0-9_%-]+)")


@asynccontextmanager
async def tickets(directory: Path, *extra: str) -> AsyncIterator[str]:
    """The protected child and its authorization server; yields its origin."""
    port_file = directory / "tickets.port"
    with (directory / "tickets.err").open("wb") as err:
        process = await anyio.open_process(
            [sys.executable, "-m", "tests.children.tickets", "--port-file", str(port_file), *extra],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            await wait_for_file(port_file)
            yield port_file.read_text()
        finally:
            await stop_process(process, grace=10)


async def stats(origin: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        answer = await http.get(f"{origin}/admin/stats")
    result: dict[str, Any] = answer.json()
    return result


FORM = re.compile(r"<form method=post action='([^']+)'><input type=hidden name=link value='([^']+)'>")


async def browse(url: str, user: str) -> httpx2.Response:
    """A person opening `url` in a browser: pressing the hub's sign-in button, following the redirects, choosing
    `user` on the authorization server's consent page."""
    async with httpx2.AsyncClient(timeout=WAIT, follow_redirects=False) as http:
        answer = await http.get(url)
        for _ in range(6):
            button = FORM.search(answer.text) if answer.status_code == 200 else None
            if button is not None:
                target = str(answer.url.join(button.group(1)))
                answer = await http.post(target, data={"link": html.unescape(button.group(2))})
                continue
            if answer.status_code not in (302, 303, 307):
                return answer
            url = answer.headers["location"]
            if "/consent?" in url:
                url += f"&user={user}"
            answer = await http.get(url)
    raise AssertionError("too many redirects")


def config(directory: Path, origin: str, **state: Any) -> Path:
    path = directory / "servers.yaml"
    document = {
        "auth": {"tokens": "tokens.json"},
        "state": {"oauth_dir": "oauth", **state},
        "servers": {"tickets": {"url": f"{origin}/mcp", "sessions": "per-identity", "oauth": {}}},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@asynccontextmanager
async def logging_in(path: Path, identity: str) -> AsyncIterator[tuple[Process, str, str]]:
    """`hub auth login tickets --as IDENTITY --no-browser` until it prints the address to open: the process, that
    address, and all it printed on stderr; stopped on leaving if still running."""
    command = [sys.executable, "-m", "hub", "auth", "login", "tickets", "--as", identity, "--no-browser"]
    process = await anyio.open_process([*command, "-c", str(path)], cwd=REPO)
    assert process.stderr is not None
    try:
        with anyio.fail_after(WAIT):
            seen = b""
            while b"/authorize?" not in seen or not seen.endswith(b"\n"):
                seen += await process.stderr.receive()
        yield process, seen.decode().strip().splitlines()[-1], seen.decode()
    finally:
        await stop_process(process, grace=10)


async def login(path: Path, identity: str) -> tuple[str, str]:
    """`hub auth login ...`, its address opened by the browser, signing in as `identity`; its stderr and stdout."""
    async with logging_in(path, identity) as (process, url, said):
        page = await browse(url, identity)
        assert page.status_code == 200 and "Signed" in page.text, page.text
        assert process.stdout is not None
        with anyio.fail_after(WAIT):
            out = b""
            async for chunk in process.stdout:
                out += chunk
            assert await process.wait() == 0
    return said, out.decode()


async def auth_status(path: Path) -> list[dict[str, Any]]:
    """`hub auth status --json`: who is signed in where."""
    with anyio.fail_after(WAIT):
        status = await anyio.run_process(
            [sys.executable, "-m", "hub", "auth", "status", "--json", "-c", str(path)], cwd=REPO, check=True
        )
    rows: list[dict[str, Any]] = json.loads(status.stdout.decode())["signed_in"]
    return rows


def text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def whoami(url: str, token: str) -> types.CallToolResult:
    async with as_person(url, token) as client:
        return await client.call_tool("tickets_whoami", {})


async def test_each_identity_signs_in_once_and_calls_as_itself(tmp_path: Path) -> None:
    async with tickets(tmp_path) as origin:
        path = config(tmp_path, origin)
        alice, bob = create_token(path, "alice"), create_token(path, "bob")
        log = tmp_path / "hub.log"
        # The hub's own identity signs in first: it lists the child's tools for everyone.
        assert "identity 'svc' signed in to server 'tickets'" in (await login(path, "svc"))[1]

        async with serve_hub_http(path, log, "--as", "svc") as url:
            refused = await whoami(url, alice)
            assert refused.is_error
            message = text_of(refused)
            assert "identity 'alice' has not signed in to server 'tickets' (OAuth)" in message
            found = LINK.search(message)
            assert found is not None, message
            link = found.group(1)

            before = await stats(origin)
            async with httpx2.AsyncClient(timeout=WAIT) as http:  # a link previewer: it spends nothing
                for method in ("HEAD", "GET"):
                    preview = await http.request(method, link)
                    assert preview.status_code == 200
            assert "If you are not alice, close this page" in html.unescape(preview.text)
            page = await browse(link, "alice")
            assert page.status_code == 200 and "'alice' is signed in to server 'tickets'" in html.unescape(page.text)
            again = await browse(link, "alice")
            assert again.status_code == 400 and "used before" in again.text  # a link is good once

            # The token from the sign-in was issued already expired: the stored sign-in is refreshed, not sent.
            assert text_of(await whoami(url, alice)) == "alice"
            after = await stats(origin)
            assert after["refreshed"] > before["refreshed"]

            bobs = await whoami(url, bob)
            assert bobs.is_error and "identity 'bob' has not signed in" in text_of(bobs)
            bob_link = LINK.search(text_of(bobs))
            assert bob_link is not None
            assert (await browse(bob_link.group(1), "bob")).status_code == 200
            assert text_of(await whoami(url, bob)) == "bob"
            assert text_of(await whoami(url, alice)) == "alice"  # each identity's own connection and tokens

        # A restart keeps every sign-in: nobody signs in again.
        signed_in = (await stats(origin))["signed_in"]
        async with serve_hub_http(path, log, "--as", "svc") as url:
            assert text_of(await whoami(url, alice)) == "alice"
            assert text_of(await whoami(url, bob)) == "bob"
            assert (await stats(origin))["signed_in"] == signed_in == ["svc", "alice", "bob"]

            # Her access token alone is revoked (the resource forgot it): the child answers 401 to a token the hub
            # holds as good, and the hub refreshes it and sends the call again; nobody is asked to sign in.
            refreshed = (await stats(origin))["refreshed"]
            async with httpx2.AsyncClient(timeout=WAIT) as http:
                assert (await http.post(f"{origin}/admin/revoke?user=alice&only=access")).json()["revoked"] >= 1
            assert text_of(await whoami(url, alice)) == "alice"
            assert (await stats(origin))["refreshed"] == refreshed + 1

            # The authorization server revokes alice's grants: her next call says how to sign in again (at once,
            # not after a timeout), her dead sign-in is forgotten (the status shows her signed out), bob's are
            # untouched, and a new sign-in works.
            async with httpx2.AsyncClient(timeout=WAIT) as http:
                assert (await http.post(f"{origin}/admin/revoke?user=alice")).json()["revoked"] >= 2
            with anyio.fail_after(WAIT):
                revoked = await whoami(url, alice)
            assert revoked.is_error and "identity 'alice' has not signed in" in text_of(revoked)
            assert "refused by the authorization server" in text_of(revoked)
            assert [e["identity"] for e in log_events(log, "oauth_sign_in_refused")] == ["alice"]
            assert "alice" not in {r["identity"] for r in await auth_status(path)}
            assert text_of(await whoami(url, bob)) == "bob"
            relink = LINK.search(text_of(revoked))
            assert relink is not None and (await browse(relink.group(1), "alice")).status_code == 200
            assert text_of(await whoami(url, alice)) == "alice"
        final = await stats(origin)

    # The hub's own tokens never reached the child; no token the child issued is in a log line or stored in clear.
    assert alice not in final["presented"] and bob not in final["presented"]
    stored = "".join(p.read_text(errors="replace") for p in (tmp_path / "oauth").iterdir())
    logged = log.read_text()
    for token in final["issued"]:
        assert token not in stored and token not in logged
    # A sign-in link is a one-time credential: every one the log mentions is redacted (the SDK's own lines too).
    assert "link=" in logged and not re.search(r"link=(?!\[REDACTED\])", logged)

    rows = await auth_status(path)
    assert {(r["server"], r["identity"], r["refreshable"]) for r in rows} == {
        ("tickets", "svc", True),
        ("tickets", "alice", True),
        ("tickets", "bob", True),
    }


async def test_a_desktop_hub_picks_up_its_users_sign_in_without_a_restart(tmp_path: Path) -> None:
    """A stdio hub (one person, `--as carol`): until carol signs in, the server says how; `hub auth login` in a
    terminal is then picked up by the running hub, whose listing gains the server's tools."""
    async with tickets(tmp_path) as origin:
        path = config(tmp_path, origin)
        host = Host()
        async with connect_hub(hub_params(path, tmp_path / "hub.log", "--as", "carol"), host) as client:
            health = await client.call_tool("hub_health", {})
            assert "run `hub auth login tickets --as carol`" in text_of(health)
            assert "tickets_whoami" not in {t.name for t in (await client.list_tools()).tools}
            await login(path, "carol")
            await wait_for_tools(client, host, {"tickets_whoami"}, limit=WAIT)
            assert text_of(await client.call_tool("tickets_whoami", {})) == "carol"
    needs = log_events(tmp_path / "hub.log", "child_needs_sign_in")
    assert len(needs) == 1  # said once, not at every try


async def test_one_persons_two_desktop_hubs_refresh_her_sign_in_once(tmp_path: Path) -> None:
    """Two desktop hosts, each with its own stdio hub as carol, share her sign-in (the files of her state
    directory). Her token is expired when both start: the authorization server holds the first hub's refresh until
    the second hub has come to its own, which waits for the first (the record's file lock) and takes what it stored.
    Refresh tokens rotate: a second refresh with the same one would be refused and cost carol her sign-in."""
    async with tickets(tmp_path) as origin:
        path = config(tmp_path, origin)
        await login(path, "carol")
        before = (await stats(origin))["refreshed"]
        answers: list[str] = []

        async def desktop(index: int) -> None:
            host = Host()
            async with connect_hub(hub_params(path, tmp_path / f"hub{index}.log", "--as", "carol"), host) as client:
                await wait_for_tools(client, host, {"tickets_whoami"}, limit=WAIT)
                answers.append(text_of(await client.call_tool("tickets_whoami", {})))

        async with httpx2.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:
            await http.post(f"{origin}/admin/hold")
            tg.start_soon(desktop, 1)
            with anyio.fail_after(WAIT):
                while (await stats(origin))["refreshing"] < 1:  # noqa: ASYNC110 - a poll of another process
                    await anyio.sleep(0.05)
            tg.start_soon(desktop, 2)
            with anyio.fail_after(WAIT):  # the second hub waits for the first's refresh (or, wrongly, refreshes too)
                while not log_events(tmp_path / "hub2.log", "oauth_refresh_waits"):
                    if (await stats(origin))["refreshing"] > 1:
                        break
                    await anyio.sleep(0.05)
            await http.post(f"{origin}/admin/release")
        assert answers == ["carol", "carol"]
        after = await stats(origin)
        assert after["refreshed"] == before + 1 and after["refused"] == 0, "one refresh, none refused"
        assert not log_events(tmp_path / "hub2.log", "child_needs_sign_in")
        (waited,) = log_events(tmp_path / "hub2.log", "oauth_refresh_waits")
        assert waited["record"] == "tokens/tickets/carol"


async def hub(command: str, path: Path) -> list[str]:
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([sys.executable, "-m", "hub", *command.split()[1:], "-c", str(path)], cwd=REPO)
    return done.stdout.decode().splitlines()


async def test_the_auth_commands_of_the_docs_run_as_shown(tmp_path: Path) -> None:
    """docs/cli.md's `hub auth` examples: the same commands, printing the same lines (times and addresses aside)."""
    shown = {c: out for b in blocks(REPO / "docs" / "cli.md") for c, out in commands(b) if c.startswith("hub auth")}
    login_svc, status, logout = (
        "hub auth login tickets --as svc --no-browser",
        "hub auth status",
        "hub auth logout tickets --as alice",
    )
    assert set(shown) == {login_svc, status, logout}
    row = re.compile(r"tickets  (alice|svc) +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00  yes")
    async with tickets(tmp_path) as origin:
        path = config(tmp_path, origin)
        err, out = await login(path, "svc")
        await login(path, "alice")
        assert (await stats(origin))["registered"] == 1, "the second sign-in reused the port the hub registered"
        said = err.splitlines()
        assert said[0] == shown[login_svc][0]
        query = "/authorize?response_type=code&client_id="
        assert said[1].startswith(origin + query) and shown[login_svc][1].startswith("https://auth.example.com" + query)
        for line in (said[1], shown[login_svc][1]):
            assert "&redirect_uri=http%3A%2F%2F127.0.0.1%3A" in line and "%2Foauth%2Fcallback&" in line
        assert out.splitlines() == shown[login_svc][2:]
        table = await hub(status, path)
        assert table[0] == shown[status][0]
        assert all(row.fullmatch(line) for line in table[1:] + shown[status][1:])
        assert sorted(line.split()[1] for line in table[1:]) == ["alice", "svc"]
        assert await hub(logout, path) == shown[logout]
        assert [line.split()[1] for line in (await hub(status, path))[1:]] == ["svc"]

        # A sign-in started and abandoned (the browser never came back) leaves the one before it as it was.
        kept = (await hub("hub auth status --json", path))[1:]
        async with logging_in(path, "svc"):
            pass  # the address printed, never opened
        assert (await hub("hub auth status --json", path))[1:] == kept


async def test_a_client_credentials_server_needs_nobody_to_sign_in(tmp_path: Path) -> None:
    """`grant: client_credentials`: the hub gets its own token with its client's id and secret (from the
    environment here), keeps it across a restart, and `hub auth login` says nobody signs in to such a server."""
    secret = "s3cret-of-the-hub-machine"
    async with tickets(tmp_path, "--client", f"hub-machine:{secret}") as origin:
        path = tmp_path / "servers.yaml"
        oauth = {"grant": "client_credentials", "client_id": "hub-machine", "client_secret": "${TICKETS_SECRET}"}
        document = {
            "state": {"oauth_dir": "oauth"},
            "servers": {"tickets": {"url": f"{origin}/mcp", "oauth": {**oauth, "issuer": origin}}},
        }
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        log = tmp_path / "hub.log"
        for _ in range(2):  # a restart keeps the token
            host = Host()
            async with connect_hub(hub_params(path, log, env={"TICKETS_SECRET": secret}), host) as client:
                await wait_for_tools(client, host, {"tickets_whoami"})
                assert text_of(await client.call_tool("tickets_whoami", {})) == "client:hub-machine"
        seen = await stats(origin)
        with anyio.fail_after(WAIT):
            refused = await anyio.run_process(
                [sys.executable, "-m", "hub", "auth", "login", "tickets", "-c", str(path)],
                cwd=REPO,
                check=False,
                env={**os.environ, "TICKETS_SECRET": secret},
            )
    assert seen["client_tokens"] == 1 and seen["signed_in"] == []
    assert refused.returncode == 2 and b"nobody signs in to it" in refused.stderr
    logged = log.read_text()
    assert secret not in logged and not any(token in logged for token in seen["issued"])

"""The status page over HTTP, without a browser (tests/integration/test_status_browser.py has one): who may see it
with `auth:` (the status and admin groups; a bearer header or the sign-in cookie, the cookie nowhere else), the
Host check, the token refused in the URL, and what it shows: the calls as the call log has them, redacted the same
way, every value escaped, arguments only when the configuration logs them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from tests.integration.test_team import as_person, create_token, hub_token, initialize
from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-4242"


def status_config(directory: Path) -> Path:
    path = directory / "servers.yaml"
    document = {
        "auth": {"tokens": "tokens.json"},
        "servers": {"alpha": python_child("tests.children.kitchen", "--name", "alpha")},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def cookie_of(answer: httpx2.Response) -> str:
    header = answer.headers["set-cookie"]
    assert re.search(r"; HttpOnly; Secure; SameSite=Strict", header), header
    return header.split(";")[0]


async def test_only_the_status_and_admin_groups_see_the_page_by_header_or_by_the_sign_in_cookie(
    tmp_path: Path,
) -> None:
    config = status_config(tmp_path)
    viewer = create_token(config, "olga", "status")
    admin = create_token(config, "ada", "admin")
    scraper = create_token(config, "prometheus", "metrics")
    async with serve_hub_http(config, tmp_path / "hub.log") as url, httpx2.AsyncClient(timeout=WAIT) as http:
        base = url.removesuffix("/mcp")
        origin = {"origin": base}

        def bearer(token: str) -> dict[str, str]:
            return {"authorization": f"Bearer {token}"}

        anonymous = await http.get(f"{base}/")
        assert anonymous.status_code == 401 and anonymous.headers["content-type"].startswith("text/html")
        assert 'name="token"' in anonymous.text and "default-src 'none'" in anonymous.headers["content-security-policy"]
        assert (await http.get(f"{base}/status.json")).status_code == 401
        refused = await http.get(f"{base}/", headers=bearer(scraper))
        assert refused.status_code == 403 and "prometheus may not see the status page" in refused.text
        assert (await http.get(f"{base}/status.json", headers=bearer(scraper))).status_code == 403
        for token in (viewer, admin):
            assert (await http.get(f"{base}/status", headers=bearer(token))).status_code == 200
            data = (await http.get(f"{base}/status.json", headers=bearer(token))).json()
            assert [s["name"] for s in data["servers"]] == ["alpha"]
        assert (await http.get(f"{base}/?access_token={viewer}")).status_code == 400, "never a token in the URL"
        assert (await http.get(f"{base}/", headers={**bearer(viewer), "host": "evil.example:80"})).status_code == 421

        # Signing in: the form's token checked like a header's; the cookie only for those who may see the page.
        wrong = await http.post(f"{base}/login", data={"token": "hub_nope"}, headers=origin)
        assert wrong.status_code == 401 and "Not signed in" in wrong.text and "set-cookie" not in wrong.headers
        not_allowed = await http.post(f"{base}/login", data={"token": scraper}, headers=origin)
        assert not_allowed.status_code == 403 and "set-cookie" not in not_allowed.headers
        signed_in = await http.post(f"{base}/login", data={"token": viewer}, headers=origin)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "./"
        cookie = {"cookie": cookie_of(signed_in)}
        page = await http.get(f"{base}/", headers=cookie)
        assert page.status_code == 200 and "Sign out" in page.text
        live = await http.get(f"{base}/?part=live", headers=cookie)
        assert live.text.startswith('<main id="status">') and "<style" not in live.text
        assert (await http.get(f"{base}/status.json", headers=cookie)).status_code == 200
        # The cookie is the page's alone: not /metrics or /mcp.
        assert (await http.get(f"{base}/metrics", headers=cookie)).status_code == 401
        mcp = await http.post(url, json=initialize()[0], headers={**initialize()[1], **cookie})
        assert mcp.status_code == 401
        out = await http.post(f"{base}/logout", headers={**cookie, **origin})
        assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
        # A revoked token stops working through the cookie at once.
        assert hub_token(config, "revoke", "olga").returncode == 0
        again = await http.get(f"{base}/", headers=cookie)
        assert again.status_code == 401 and "no longer valid" in again.text

        async with as_person(url, admin) as client:
            assert not (await client.call_tool("alpha_echo", {"text": "hi"})).is_error
        calls = (await http.get(f"{base}/status.json", headers=bearer(admin))).json()["calls"]
        assert [(c["identity"], c["name"], c["outcome"]) for c in calls] == [("ada", "alpha_echo", "ok")]


async def test_the_page_shows_the_calls_as_the_call_log_has_them_redacted_and_escaped(tmp_path: Path) -> None:
    kitchen: dict[str, Any] = python_child("tests.children.kitchen", "--name", "alpha", env={"API_TOKEN": SECRET})
    config = write_config(tmp_path, {"alpha": kitchen, "quiet": {**kitchen, "log_arguments": False}})
    config.write_text(config.read_text().replace("hub: {}", "hub: {log_arguments: true}"))
    log = tmp_path / "hub.log"
    host = Host()
    async with (
        serve_hub_http(config, log) as url,
        connect_host(url, host) as client,
        httpx2.AsyncClient(timeout=WAIT) as http,
    ):
        await wait_for_tools(client, host, {"alpha_echo", "quiet_echo"})
        said = f"the {SECRET} and Bearer abcdefghijkl0123"
        assert not (await client.call_tool("alpha_echo", {"text": said})).is_error
        assert not (await client.call_tool("quiet_echo", {"text": said})).is_error
        hostile = "<img src=x onerror=alert(1)>"
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool(hostile, {})
        base = url.removesuffix("/mcp")
        data = (await http.get(f"{base}/status.json")).json()
        page = (await http.get(f"{base}/")).text

    logged = [json.loads(line) for line in log.read_text().splitlines() if '"event": "call"' in line]
    shown = list(reversed(data["calls"]))
    assert [c["name"] for c in shown] == [c["name"] for c in logged] == ["alpha_echo", "quiet_echo", hostile]
    assert logged[0]["arguments"] == {"text": "the [REDACTED] and [REDACTED]"}
    assert shown[0]["arguments"] == '{"text":"the [REDACTED] and [REDACTED]"}', "as compact JSON"
    assert "arguments" not in shown[1] and "arguments" not in logged[1], "not for a server that does not log them"
    assert [c["duration_ms"] for c in shown] == [c["duration_ms"] for c in logged]
    assert SECRET not in page and SECRET not in json.dumps(data)
    assert hostile not in page and html_escaped(hostile) in page
    by_child = {a["child"]: a for a in data["activity"]}
    assert (by_child["alpha"]["calls"], by_child["quiet"]["calls"], by_child["hub"]["errors"]) == (1, 1, 1)
    assert by_child["alpha"]["p50_ms"] == pytest.approx(logged[0]["duration_ms"], abs=0.01)
    alpha = next(s for s in data["servers"] if s["name"] == "alpha")
    assert alpha["state"] == "ready" and alpha["tools"] > 0 and alpha["tokens"] > 0


def html_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")

"""A hub a team shares: bearer tokens at the HTTP front, policy per identity, the identity in the call log.

A real `hub serve --http` with two real children (`icinga`, `postgres`: the kitchen child under two names), tokens
made with the real `hub token` command, and the SDK's client as each person's host.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types as types
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_docs import blocks, commands
from tests.support.children import python_child
from tests.support.logs import log_events, wait_for_log
from tests.support.mcp_client import Host, connect_hub, hub_params, initialize_request
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

POLICIES = [
    {"name": "oncall-reads", "groups": ["oncall"], "allow": ["icinga_*", "postgres_echo"]},
    {"name": "dba", "groups": ["dba"], "allow": ["postgres_*"]},
    {"name": "admins", "groups": ["admin"], "allow": ["*"]},
]


def team_config(directory: Path, policies: list[dict[str, Any]] = POLICIES) -> Path:
    path = directory / "servers.yaml"
    document = {
        # A first listing waits for both children however loaded the machine is (bounded): these tests check what
        # each identity sees, not how fast the children start (tests/integration/test_startup_listing.py does).
        "hub": {"startup_listing_wait": 60},
        "auth": {"tokens": "tokens.json"},
        "policies": policies,
        "default_policy": "deny",
        "servers": {
            "icinga": python_child("tests.children.kitchen", "--name", "icinga"),
            "postgres": python_child("tests.children.kitchen", "--name", "postgres"),
        },
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def hub_token(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", "token", *args, "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def create_token(config: Path, name: str, *groups: str) -> str:
    done = hub_token(config, "create", name, *(a for g in groups for a in ("--group", g)))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]  # the last line of output is the token itself


@asynccontextmanager
async def as_person(url: str, token: str, host: Host | None = None) -> AsyncIterator[Client]:
    """The SDK's client on the hub, with `Authorization: Bearer <token>` on every request."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    host = host or Host()
    async with (
        http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="legacy",
            message_handler=host.on_message,
            read_timeout_seconds=WAIT,
        ) as client,
    ):
        yield client


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def initialize(token: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    body = initialize_request()
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return body, headers


async def test_tokens_admit_their_holder_and_refuse_everyone_else(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    alice = create_token(config, "alice", "oncall")
    bob = create_token(config, "bob", "dba")
    # An expired entry, as the token file holds one (its secret known to the test only).
    tokens = json.loads((tmp_path / "tokens.json").read_text())
    old = "hub_expired-secret-of-carol-0123456789abcdef"
    tokens["tokens"].append(
        {
            "name": "carol",
            "sha256": hashlib.sha256(old.encode()).hexdigest(),
            "groups": [],
            "created": "2026-01-01T00:00:00Z",
            "expires": "2026-01-02T00:00:00Z",
        }
    )
    (tmp_path / "tokens.json").write_text(json.dumps(tokens))
    log = tmp_path / "hub.log"
    async with serve_hub_http(config, log) as url, httpx2.AsyncClient(timeout=WAIT) as http:
        body, headers = initialize()
        missing = await http.post(url, json=body, headers=headers)
        assert missing.status_code == 401
        challenge = missing.headers["www-authenticate"]
        base = url.removesuffix("/mcp")
        assert challenge.startswith(f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"')
        metadata = (await http.get(f"{base}/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["resource"] == url and metadata["bearer_methods_supported"] == ["header"]

        for wrong, why in (("hub_not-a-token", "not valid"), (old, "expired")):
            refused = await http.post(url, json=body, headers=initialize(wrong)[1])
            assert refused.status_code == 401, wrong
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]
            assert why in refused.json()["error"]["message"]
        in_url = await http.post(f"{url}?access_token={alice}", json=body, headers=headers)
        assert in_url.status_code == 400
        assert "Authorization header only" in in_url.json()["error"]["message"]

        async with as_person(url, alice) as client:
            result = await client.call_tool("icinga_echo", {"text": "hi"})
            assert not result.is_error
            # Bob's token does not open Alice's session: her session id is not found for him.
            session_id = next(e["host_session"] for e in log_events(log, "call") if e["identity"] == "alice")
            stolen = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                headers={**initialize(bob)[1], "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"},
            )
            assert stolen.status_code == 404

        revoked = hub_token(config, "revoke", "alice")
        assert revoked.returncode == 0, revoked.stderr
        after = await http.post(url, json=body, headers=initialize(alice)[1])
        assert after.status_code == 401

    line = next(e for e in log_events(log, "call") if e["name"] == "icinga_echo")
    assert (line["identity"], line["auth"], line["rule"]) == ("alice", "token", "oncall-reads")
    text = log.read_text() + (tmp_path / "hub.err").read_text()
    for secret in (alice, bob, old):
        assert secret not in text, "no token in any log line"


async def test_two_identities_at_once_see_and_call_only_their_own_tools(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    alice = create_token(config, "alice", "oncall")
    bob = create_token(config, "bob", "dba")
    log = tmp_path / "hub.log"
    async with serve_hub_http(config, log) as url, as_person(url, alice) as a, as_person(url, bob) as b:
        seen_a, seen_b = await tool_names(a), await tool_names(b)
        assert seen_a and all(n.startswith("icinga_") or n == "postgres_echo" for n in seen_a)
        assert seen_b and all(n.startswith("postgres_") for n in seen_b)
        assert "hub_health" not in seen_a | seen_b  # no rule allows it to them
        assert "icinga" not in (b.instructions or "")  # nor does the hub's description of itself name them

        async def calls(client: Client, mine: str, theirs: str, results: dict[str, Any]) -> None:
            for _ in range(10):
                results.setdefault(mine, []).append((await client.call_tool(mine, {"text": "x"})).is_error)
                with pytest.raises(Exception, match=f"Unknown tool: '{theirs}'"):
                    await client.call_tool(theirs, {"text": "x"})

        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(calls, a, "icinga_echo", "postgres_add", results)
            tg.start_soon(calls, b, "postgres_add", "icinga_echo", results)
        assert results["icinga_echo"] == [False] * 10
        assert len(results["postgres_add"]) == 10
    lines = log_events(log, "call")
    denied = [e for e in lines if e["outcome"] == "denied"]
    assert {(e["identity"], e["name"]) for e in denied} == {("alice", "postgres_add"), ("bob", "icinga_echo")}
    assert all(e["rule"] is None for e in denied), "the default denied them"


async def test_a_policy_change_on_reload_reaches_only_the_sessions_it_changes(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    alice = create_token(config, "alice", "oncall")
    bob = create_token(config, "bob", "dba")
    log = tmp_path / "hub.log"
    host_a, host_b = Host(), Host()
    async with (
        serve_hub_http(config, log) as url,
        as_person(url, alice, host_a) as a,
        as_person(url, bob, host_b) as b,
    ):
        assert "postgres_echo" in await tool_names(b)
        narrowed = [p if p["name"] != "dba" else {**p, "allow": ["postgres_add"]} for p in POLICIES]
        team_config(tmp_path, narrowed)
        changed = types.ToolListChangedNotification
        await host_b.wait_for(lambda: any(isinstance(n, changed) for n in host_b.notifications), "bob told")
        assert await tool_names(b) == {"postgres_add"}
        await wait_for_log(log, "policy_changed")
        assert "icinga_echo" in await tool_names(a)  # a round trip on Alice's session after the change
        assert not any(isinstance(n, changed) for n in host_a.notifications)
    assert [e["hosts_told"] for e in log_events(log, "policy_changed")] == [1]


async def test_reload_over_http_needs_an_admin(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    alice = create_token(config, "alice", "oncall")
    root = create_token(config, "root", "admin")
    async with serve_hub_http(config, tmp_path / "hub.log") as url, httpx2.AsyncClient(timeout=WAIT) as http:
        reload = url.removesuffix("/mcp") + "/reload"
        assert (await http.post(reload)).status_code == 401
        refused = await http.post(reload, headers={"authorization": f"Bearer {alice}"})
        assert refused.status_code == 403 and refused.json()["error"] == "insufficient_scope"
        done = await http.post(reload, headers={"authorization": f"Bearer {root}"})
        assert done.status_code == 200 and "unchanged" in done.json()


async def test_a_reachable_address_without_auth_is_refused_at_start(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers: {}\n")
    done = await anyio.run_process(
        [sys.executable, "-m", "hub", "serve", "--config", str(config), "--http", "0.0.0.0:0"], cwd=REPO, check=False
    )
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert "has no 'auth:'" in stderr and "--insecure-no-auth" in stderr


async def test_a_stdio_host_acts_as_the_identity_given_with_as(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--as", "dave", "--group", "dba")) as client:
        names = await tool_names(client)
        assert names and all(n.startswith("postgres_") for n in names)
        with pytest.raises(Exception, match="Unknown tool: 'icinga_echo'"):
            await client.call_tool("icinga_echo", {"text": "x"})
    line = next(e for e in log_events(log, "call") if e["name"] == "icinga_echo")
    assert (line["identity"], line["auth"], line["outcome"]) == ("dave", "local", "denied")


class Jwks:
    """The organisation's OpenID provider as far as the hub sees it: a JWKS served over loopback, and keys that
    sign the test's tokens."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}
        self.published: list[str] = []
        self.fetches = 0
        jwks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                jwks.fetches += 1
                keys = [
                    {**json.loads(RSAAlgorithm.to_jwk(jwks.keys[k].public_key())), "kid": k, "use": "sig"}
                    for k in jwks.published
                ]
                body = json.dumps({"keys": keys}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add_key(self, kid: str, publish: bool = True) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def token(self, kid: str, **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": AUDIENCE, "sub": "erin", "iat": now, "exp": now + 300, **claims}
        return jwt.encode(payload, self.keys[kid], algorithm="RS256", headers={"kid": kid})


AUDIENCE = "http://hub.test/mcp"


@pytest.fixture
def provider() -> Iterator[Jwks]:
    jwks = Jwks()
    jwks.thread.start()
    yield jwks
    jwks.server.shutdown()
    jwks.server.server_close()


async def test_jwts_of_the_organisations_provider_are_checked_against_its_keys(tmp_path: Path, provider: Jwks) -> None:
    provider.add_key("k1")
    provider.add_key("k2", publish=False)
    config = team_config(tmp_path)
    document = yaml.safe_load(config.read_text())
    document["auth"] = {
        "jwt": {
            "issuer": provider.url,
            "audience": AUDIENCE,
            "jwks_url": provider.url + "/jwks",
            "groups_claim": "roles",
        }
    }
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    log = tmp_path / "hub.log"
    good = provider.token("k1", roles=["dba"])
    async with serve_hub_http(config, log) as url, httpx2.AsyncClient(timeout=WAIT) as http:
        metadata = (await http.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata == {
            "resource": AUDIENCE,
            "bearer_methods_supported": ["header"],
            "resource_name": "hub",
            "authorization_servers": [provider.url],
        }
        async with as_person(url, good) as client:
            names = await tool_names(client)
            assert names and all(n.startswith("postgres_") for n in names)
            assert not (await client.call_tool("postgres_echo", {"text": "x"})).is_error

        none_header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT","kid":"k1"}').rstrip(b"=").decode()
        claims = json.dumps({"iss": provider.url, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 300})
        unsigned = f"{none_header}.{base64.urlsafe_b64encode(claims.encode()).rstrip(b'=').decode()}."
        refused = {
            "wrong audience": provider.token("k1", aud="http://elsewhere/mcp"),
            "wrong issuer": provider.token("k1", iss="http://evil.test"),
            "expired": provider.token("k1", exp=int(time.time()) - 3600),
            "algorithm not allowed": unsigned,
            "unknown key id": provider.token("k2"),
        }
        for why, token in refused.items():
            answer = await http.post(url, json=initialize()[0], headers=initialize(token)[1])
            assert answer.status_code == 401, why
            assert why in answer.json()["error"]["message"]
            assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        # Unknown key ids within a minute of the last fetch do not make the hub fetch again: a flood of tokens with
        # made-up key ids cannot make it hammer the provider (a rotation is seen at most a minute late).
        for _ in range(5):
            await http.post(url, json=initialize()[0], headers=initialize(provider.token("k2"))[1])
        assert provider.fetches == 1
    line = next(e for e in log_events(log, "call") if e["name"] == "postgres_echo")
    assert (line["identity"], line["auth"], line["rule"]) == ("erin", "jwt", "dba")
    assert good not in log.read_text()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A Prometheus scrape as {(sample name, labels): value}."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_metrics_count_what_was_routed_and_refused_and_only_readers_may_scrape(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    alice = create_token(config, "alice", "oncall")
    scraper = create_token(config, "prometheus", "metrics")
    async with serve_hub_http(config, tmp_path / "hub.log") as url, httpx2.AsyncClient(timeout=WAIT) as http:
        metrics_url = url.removesuffix("/mcp") + "/metrics"
        assert (await http.get(metrics_url)).status_code == 401
        assert (await http.get(metrics_url, headers={"authorization": f"Bearer {alice}"})).status_code == 403

        async def scrape() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
            answer = await http.get(metrics_url, headers={"authorization": f"Bearer {scraper}"})
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
            assert "alice" not in answer.text, "no identity in any label"
            return samples(answer.text)

        ok = ("hub_tool_calls_total", frozenset({("tool", "icinga_echo"), ("outcome", "ok")}))
        denied = ("hub_rejections_total", frozenset({("reason", "denied")}))
        unauthenticated = ("hub_rejections_total", frozenset({("reason", "unauthenticated")}))
        before = await scrape()
        async with as_person(url, alice) as client:
            for _ in range(3):
                assert not (await client.call_tool("icinga_echo", {"text": "x"})).is_error
            with pytest.raises(Exception, match="Unknown tool"):
                await client.call_tool("postgres_add", {"a": 1, "b": 2})
        await http.post(url, json=initialize()[0], headers=initialize("hub_wrong")[1])
        after = await scrape()
        assert after[ok] - before.get(ok, 0) == 3
        assert after[denied] - before.get(denied, 0) == 1
        assert after[unauthenticated] - before[unauthenticated] == 1  # the 401s above were counted too
        assert after[("hub_child_up", frozenset({("child", "icinga")}))] == 1
        buckets = [k for k in after if k[0] == "hub_request_duration_seconds_bucket" and ("child", "icinga") in k[1]]
        assert buckets, "durations by child"


def _shown(line: str, directory: Path) -> re.Pattern[str]:
    """A line of docs/team.md as a pattern: its times, tokens and the example's directory are the run's own."""
    text = line.replace("/srv/hub", str(directory))
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "\0DATE\0", text)
    text = re.sub(r"hub_[A-Za-z0-9_-]{43}", "\0TOKEN\0", text)
    pattern = re.escape(text)
    pattern = pattern.replace("\0DATE\0", r"\d{4}-\d\d-\d\d \d\d:\d\d").replace("\0TOKEN\0", r"hub_[A-Za-z0-9_-]{43}")
    return re.compile(pattern)


async def test_the_team_page_commands_run_as_shown(tmp_path: Path) -> None:
    """Every `$ hub ...` of docs/team.md, in a copy of docs/examples/team, prints what the page shows: on stdout,
    and the `hub: ` lines it shows on stderr (what the policy hid, and which rule did)."""
    shutil.copy(REPO / "docs" / "examples" / "team" / "servers.yaml", tmp_path / "servers.yaml")
    env = {**os.environ, "HUB_GIT_REPOSITORY": str(REPO)}
    ran = 0
    for block in blocks(REPO / "docs" / "team.md"):
        for command, shown in commands(block):
            done = await anyio.run_process(
                [sys.executable, "-m", "hub", *shlex.split(command)[1:]], cwd=tmp_path, env=env, check=False
            )
            printed = [line for line in done.stdout.decode().splitlines() if line.strip()]
            assert done.returncode == 0, (command, done.stderr.decode())
            said = [line for line in done.stderr.decode().splitlines() if line.startswith("hub: ")]
            assert said == [line for line in shown if line.startswith("hub: ")], (command, said)
            shown = [line for line in shown if not line.startswith("hub: ")]
            if command.startswith("hub list"):  # the tool table; listing sizes change with the servers' versions
                printed = printed[: next(i for i, line in enumerate(printed) if line.startswith("SERVER "))]
                shown = shown[: next(i for i, line in enumerate(shown) if line.startswith("SERVER "))]
            assert len(printed) == len(shown), (command, printed)
            for line, expected in zip(printed, shown, strict=True):
                assert _shown(expected, tmp_path).fullmatch(line.rstrip()), (command, line, expected)
            ran += 1
    assert ran >= 6


async def test_each_identity_gets_its_own_child_process_with_its_own_credentials(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    for name in ("alice", "bob", "hubsvc"):
        (secrets / f"pw-{name}").write_text(f"password-of-{name}\n")
    config = tmp_path / "servers.yaml"
    document = {
        "auth": {"tokens": "tokens.json"},
        "secrets": {"dir": "secrets"},
        "servers": {
            "db": {
                **python_child("tests.children.kitchen", "--name", "db"),
                "sessions": "per-identity",
                "env": {"WHO": "${identity.name}", "PASSWORD": "${secret:pw-${identity.name}}"},
            }
        },
    }
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    tokens = {name: create_token(config, name) for name in ("alice", "bob", "carol")}
    log = tmp_path / "hub.log"

    async def env(client: Client, name: str) -> str:
        result = await client.call_tool("db_env", {"name": name})
        return str(result.content[0].text)  # type: ignore[union-attr]

    async with (
        serve_hub_http(config, log, "--as", "hubsvc") as url,
        as_person(url, tokens["alice"]) as a1,
        as_person(url, tokens["alice"]) as a2,
    ):
        async with as_person(url, tokens["bob"]) as b:
            assert (await env(a1, "WHO"), await env(a1, "PASSWORD")) == ("alice", "password-of-alice")
            assert (await env(b, "WHO"), await env(b, "PASSWORD")) == ("bob", "password-of-bob")
            assert await env(a2, "WHO") == "alice"
        async with as_person(url, tokens["carol"]) as c:
            refused = await c.call_tool("db_env", {"name": "WHO"})
            assert refused.is_error
            assert "identity 'carol' has no secret 'pw-carol'" in str(refused.content[0].text)  # type: ignore[union-attr]
    opened = [e["host_session"] for e in log_events(log, "session_connection_opened")]
    assert sorted(opened) == ["identity:alice", "identity:bob"], "one process per identity, shared by its sessions"
    text = log.read_text()
    assert "password-of" not in text, "no secret in any log line"

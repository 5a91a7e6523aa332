"""`hub auth login | logout | status`: identities' sign-ins to OAuth children (servers with `oauth:`).

`login SERVER` signs an identity (`--as NAME`, default the local user) in where the hub runs: it listens on a
loopback port for the authorization server's redirect, prints the address to open (and opens a browser unless
`--no-browser`), and stores the tokens where the hub reads them (`state:`; hub.upstream.oauth). A running hub uses
them from its next connection to that server: no restart. The hub's own identity (the one `hub serve` runs as)
signs in this way before the hub can list an OAuth child's tools; on a team hub, other identities usually follow
the link their first call answers with instead.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import webbrowser
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream

from hub.access.identity import local_user
from hub.config.schema import LoadedConfig, ServerConfig
from hub.relay.state import oauth_credentials, open_state
from hub.upstream.credentials import MissingCredential, personal
from hub.upstream.oauth import CLIENT, Credentials
from hub.upstream.signin import EXCHANGE_SECONDS, SignInFailed, sign_in

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

EXIT_USAGE = 2
HEAD_SECONDS = 10.0  # a browser's request to the loopback listener must arrive within this


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    auth = commands.add_parser("auth", help="sign identities in to OAuth-protected servers (servers with oauth:)")
    actions = auth.add_subparsers(dest="action", required=True)
    login = actions.add_parser("login", parents=[common], help="sign in to a server in a browser; keeps the tokens")
    login.add_argument("server", help="a server of servers.yaml with oauth:")
    login.add_argument("--no-browser", action="store_true", help="print the address to open; do not open a browser")
    login.add_argument(
        "--port",
        type=int,
        default=0,
        help="loopback port for the redirect (default: any free one; a registered "
        "client_id needs the one its redirect URI names)",
    )
    logout = actions.add_parser("logout", parents=[common], help="forget an identity's sign-in to a server")
    logout.add_argument("server")
    status = actions.add_parser("status", parents=[common], help="who is signed in to which server (never tokens)")
    status.add_argument("--json", action="store_true", help="one JSON document")
    for sub in (login, logout):
        sub.add_argument("--as", dest="identity", metavar="NAME", help="the identity (default: the local user)")
        sub.add_argument("--group", action="append", default=[], help="a group of that identity; repeatable")


def run_auth_command(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    return anyio.run(_act, args, loaded)


async def _act(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    where = loaded.config.state
    shared = open_state(where.backend, where.url, where.key)
    credentials = oauth_credentials(where, loaded.path.parent, shared)
    try:
        if args.action == "status":
            return await _status(credentials, args.json)
        server = loaded.config.servers.get(args.server)
        if server is None or server.oauth is None:
            named = sorted(n for n, s in loaded.config.servers.items() if s.oauth is not None) or ["none"]
            _tell(
                f"hub: {args.server!r} is not a server with oauth: in {loaded.path} (those with it: {', '.join(named)})"
            )
            return EXIT_USAGE
        if server.oauth.grant == "client_credentials":
            _tell(
                f"hub: server {args.server!r} signs in with the hub's client credentials (grant: client_credentials): "
                "nobody signs in to it"
            )
            return EXIT_USAGE
        identity = local_user(args.identity, tuple(args.group))
        if args.action == "logout":
            had = await credentials.forget(args.server, identity.name)
            state = "signed out of" if had else "was not signed in to"
            sys.stdout.write(f"identity '{identity.name}' {state} server '{args.server}'\n")
            return 0
        try:
            config = personal(server, identity, loaded.secrets)
        except MissingCredential as exc:
            _tell(f"hub: {exc}")
            return 1
        return await _login(credentials, args, config, identity.name)
    finally:
        await shared.close()


async def _login(credentials: Credentials, args: argparse.Namespace, config: ServerConfig, identity: str) -> int:
    from mcp.shared.auth import AuthorizationCodeResult

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=args.port)
    port = listener.extra(SocketAttribute.local_port)
    redirect_uri = f"http://127.0.0.1:{port}/oauth/callback"
    back = anyio.Event()
    answered = anyio.Event()
    landed: list[AuthorizationCodeResult] = []
    outcome: list[str] = []
    finished = anyio.Event()

    async def show(url: str) -> None:
        _tell(f"Open this address in a browser to sign '{identity}' in to server '{args.server}':\n{url}")
        if not args.no_browser:
            webbrowser.open(url)

    async def wait() -> AuthorizationCodeResult:
        await back.wait()
        return landed[0]

    async def handle(stream: SocketStream) -> None:
        async with stream:
            query = await _request_query(stream)
            if query is None:
                await _answer(stream, 404, "Not found")
                return
            landed.append(
                AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))
            )
            back.set()
            with anyio.move_on_after(EXCHANGE_SECONDS * 2):
                await finished.wait()
            await _answer(stream, 200, outcome[0] if outcome else "The sign-in did not finish in time.")
            answered.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            await sign_in(credentials, args.server, config, identity, redirect_uri, show, wait)
        except SignInFailed as exc:
            outcome.append(f"Sign-in failed: {exc}")
            _tell(f"hub: {exc}")
        else:
            outcome.append(f"Signed '{identity}' in to server '{args.server}'. You can close this page.")
        finished.set()
        if back.is_set():
            with anyio.move_on_after(5):
                await answered.wait()
        tg.cancel_scope.cancel()
    if outcome[0].startswith("Sign-in failed"):
        return 1
    sys.stdout.write(
        f"identity '{identity}' signed in to server '{args.server}'; a running hub uses it from its next connection\n"
    )
    return 0


def _tell(text: str) -> None:
    """A line for the person at the terminal: stderr (stdout carries only the command's result)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


async def _request_query(stream: SocketStream) -> dict[str, str] | None:
    """The query of a `GET /oauth/callback?...` request (None: another path, or no request in time)."""
    head = b""
    with anyio.move_on_after(HEAD_SECONDS):
        while b"\r\n\r\n" not in head and len(head) < 16384:
            head += await stream.receive()
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if len(line) < 2 or line[0] != "GET" or urlsplit(line[1]).path != "/oauth/callback":
        return None
    return {k: v[0] for k, v in parse_qs(urlsplit(line[1]).query).items()}


async def _answer(stream: SocketStream, status: int, text: str) -> None:
    import html

    body = f"<!doctype html><meta charset=utf-8><title>hub</title><p>{html.escape(text)}</p>".encode()
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\ncontent-type: text/html; charset=utf-8"
        f"\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    await stream.send(head + body)


async def _status(credentials: Credentials, as_json: bool) -> int:
    everyone = await credentials.everyone()
    rows = [
        {
            "server": s.child,
            "identity": "(client credentials)" if s.identity == CLIENT else s.identity,
            "expires": None
            if s.expires_at is None
            else datetime.datetime.fromtimestamp(s.expires_at, datetime.UTC).isoformat(timespec="seconds"),
            "refreshable": bool(s.tokens.get("refresh_token")),
        }
        for s in sorted(everyone, key=lambda s: (s.child, s.identity))
    ]
    if as_json:
        sys.stdout.write(json.dumps({"signed_in": rows}, indent=2) + "\n")
        return 0
    table = [["SERVER", "IDENTITY", "TOKEN EXPIRES", "REFRESH"]] + [
        [r["server"], r["identity"], r["expires"] or "never", "yes" if r["refreshable"] else "no"] for r in rows
    ]
    widths = [max(len(str(r[i])) for r in table) for i in range(4)]
    for row in table:
        sys.stdout.write("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    return 0

"""`hub auth login | logout | status`: identities' sign-ins to OAuth children (servers with `oauth:`); and
`hub token create | list | revoke`: the static bearer tokens of the file `auth.tokens` names.

`login` listens on a loopback port for the authorization server's redirect and stores the tokens where the hub
reads them (hub.upstream.oauth): a running hub uses them from its next connection to that server, no restart.

`token create` prints the new token once, alone on the last line of its output, so that a script can take it with
`tail -n 1`; only its hash is stored.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import html
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.stapled import MultiListener

from hub.access.identity import local_user
from hub.access.tokens import TokenFile, TokenFileError
from hub.cli.output import EXIT_USAGE, fail, print_json, print_table
from hub.cli.start import load
from hub.config.schema import LoadedConfig, ServerConfig
from hub.state import open_state
from hub.upstream.credentials import MissingCredential, personal
from hub.upstream.oauth import CLIENT, Credentials
from hub.upstream.oauth_vaults import oauth_credentials
from hub.upstream.signin import EXCHANGE_SECONDS, SignInFailed, sign_in

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

HEAD_SECONDS = 10.0  # a browser's request to the loopback listener must arrive within this


def run_auth_command(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    return loaded if isinstance(loaded, int) else anyio.run(_act, args, loaded)


async def _act(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    where = loaded.config.state
    shared = open_state(where.backend, where.url, where.key)
    credentials = oauth_credentials(where, loaded.path.parent, shared)
    try:
        if args.action == "status":
            return await _status(credentials, args.json)
        server = loaded.config.servers.get(args.server)
        if server is None or server.oauth is None:
            named = ", ".join(sorted(n for n, s in loaded.config.servers.items() if s.oauth is not None)) or "none"
            return fail(
                f"{args.server!r} is not a server with oauth: in {loaded.path} (those with it: {named})", EXIT_USAGE
            )
        if server.oauth.grant == "client_credentials":
            return fail(
                f"server {args.server!r} signs in with the hub's client credentials (grant: client_credentials): "
                "nobody signs in to it",
                EXIT_USAGE,
            )
        identity = local_user(args.identity, tuple(getattr(args, "group", ())))
        if args.action == "logout":
            had = await credentials.forget(args.server, identity.name)
            state = "signed out of" if had else "was not signed in to"
            sys.stdout.write(f"identity '{identity.name}' {state} server '{args.server}'\n")
            return 0
        try:
            config = personal(server, identity, loaded.secrets)
        except MissingCredential as exc:
            return fail(str(exc))
        return await _login(credentials, args, config, identity.name)
    finally:
        await shared.close()


async def _listener(credentials: Credentials, server: str, port: int) -> MultiListener[SocketStream]:
    """The loopback listener for the redirect: on `port` if given; else on the port of a loopback redirect URI the
    hub registered at this server before, while it is free, so that signing in again (another identity, or later)
    reuses that registration instead of registering the hub once more; else on any free port."""
    if port:
        return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    for uri in await credentials.redirect_uris(server):
        parts = urlsplit(uri)
        if parts.hostname == "127.0.0.1" and parts.port and parts.path == "/oauth/callback":
            with contextlib.suppress(OSError):  # taken now: another registration, or a new one
                return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=parts.port)
    return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)


async def _login(credentials: Credentials, args: argparse.Namespace, config: ServerConfig, identity: str) -> int:
    listener = await _listener(credentials, args.server, args.port)
    redirect_uri = f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}/oauth/callback"
    loopback = _Loopback()

    async def show(url: str) -> None:
        opening = f"Open this address in a browser to sign '{identity}' in to server '{args.server}':\n{url}"
        print(opening, file=sys.stderr)
        if not args.no_browser:
            webbrowser.open(url)

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, loopback.handle)
        try:
            await sign_in(credentials, args.server, config, identity, redirect_uri, show, loopback.code)
        except SignInFailed as exc:
            fail(str(exc))
            await loopback.over(f"Sign-in failed: {exc}")
            tg.cancel_scope.cancel()
            return 1
        await loopback.over(f"Signed '{identity}' in to server '{args.server}'. You can close this page.")
        tg.cancel_scope.cancel()
    sys.stdout.write(
        f"identity '{identity}' signed in to server '{args.server}'; a running hub uses it from its next connection\n"
    )
    return 0


class _Loopback:
    """The loopback end of the redirect: takes the browser's request with the code, and answers it with how the
    sign-in ended. Every wait is bounded."""

    def __init__(self) -> None:
        self.landed: AuthorizationCodeResult | None = None
        self.back = anyio.Event()
        self.page = "The sign-in did not finish in time."
        self.finished = anyio.Event()
        self.answered = anyio.Event()

    async def code(self) -> AuthorizationCodeResult:
        await self.back.wait()
        assert self.landed is not None
        return self.landed

    async def over(self, page: str) -> None:
        """The sign-in ended: the browser, if it came back, is shown `page` (waited for a few seconds)."""
        self.page = page
        self.finished.set()
        if self.back.is_set():
            with anyio.move_on_after(5):
                await self.answered.wait()

    async def handle(self, stream: SocketStream) -> None:
        try:
            async with stream:
                await self._answer(stream)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # a browser's spare connection, closed unused; or one that left before its answer

    async def _answer(self, stream: SocketStream) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        query = await _request_query(stream)
        if query is None:
            await _answer(stream, 404, "Not found")
            return
        self.landed = AuthorizationCodeResult(
            code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")
        )
        self.back.set()
        with anyio.move_on_after(EXCHANGE_SECONDS * 2):
            await self.finished.wait()
        await _answer(stream, 200, self.page)
        self.answered.set()


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
    body = f"<!doctype html><meta charset=utf-8><title>hub</title><p>{html.escape(text)}</p>".encode()
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\ncontent-type: text/html; charset=utf-8"
        f"\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    await stream.send(head + body)


async def _status(credentials: Credentials, as_json: bool) -> int:
    rows = [
        {
            "server": s.child,
            "identity": "(client credentials)" if s.identity == CLIENT else s.identity,
            "expires": None
            if s.expires_at is None
            else datetime.datetime.fromtimestamp(s.expires_at, datetime.UTC).isoformat(timespec="seconds"),
            "refreshable": bool(s.tokens.get("refresh_token")),
        }
        for s in sorted(await credentials.everyone(), key=lambda s: (s.child, s.identity))
    ]
    if as_json:
        print_json({"signed_in": rows}, sys.stdout)
        return 0
    table = [["SERVER", "IDENTITY", "TOKEN EXPIRES", "REFRESH"]] + [
        [str(r["server"]), str(r["identity"]), str(r["expires"] or "never"), "yes" if r["refreshable"] else "no"]
        for r in rows
    ]
    print_table(table, sys.stdout)
    return 0


def run_token_command(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    if isinstance(loaded, int):
        return loaded
    if loaded.token_path is None:
        return fail(f"{loaded.path} has no token file; add it first:\n\nauth:\n  tokens: tokens.json\n", EXIT_USAGE)
    try:
        return _token_action(args, TokenFile(loaded.token_path))
    except TokenFileError as exc:
        return fail(str(exc))


def _token_action(args: argparse.Namespace, tokens: TokenFile) -> int:
    out = sys.stdout
    if args.action == "create":
        secret = tokens.create(args.name, tuple(args.group), args.expires)
        groups = ", ".join(args.group) or "no groups"
        out.write(f"created token {args.name!r} ({groups}) in {tokens.path}; it is shown once, keep it now:\n")
        out.write(secret + "\n")
        return 0
    if args.action == "revoke":
        tokens.revoke(args.name)
        out.write(f"revoked token {args.name!r}; a running hub refuses it from its next request\n")
        return 0
    entries = tokens.entries()
    now = time.time()
    rows = [["NAME", "GROUPS", "CREATED", "EXPIRES", "STATE"]]
    rows += [
        [
            e.name,
            ",".join(e.groups) or "-",
            _day(e.created),
            "never" if e.expires is None else _day(e.expires),
            "expired" if e.expired(now) else "valid",
        ]
        for e in entries
    ]
    print_table(rows, out)
    out.write(f"{len(entries)} token(s) in {Path(tokens.path)}\n")
    return 0


def _day(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))

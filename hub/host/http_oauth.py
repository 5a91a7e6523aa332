"""The HTTP front's sign-in to OAuth children: `/oauth/start?link=...` and `GET /oauth/callback`.

An identity that has not signed in to an OAuth child is told, in the error of its call, a link to `/oauth/start`
(`hub.upstream.oauth`): sealed by the hub, naming the child and the identity, good for LINK_SECONDS and once (its
nonce is spent in the shared state, so across replicas too). Opening it shows whom it signs in and a button; the
button (a POST) starts the SDK's flow (`hub.upstream.signin`) and redirects the browser to the child's
authorization server, which sends it back to `/oauth/callback`; that hands the code to the waiting flow (matched by
its `state`). A flow lives on the replica that started it (docs/deploy.md).
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.access.identity import Identity
from hub.config.schema import ServerConfig
from hub.host.http_replies import read_body, reply
from hub.host.port import HubPort
from hub.protocol import errors
from hub.upstream.credentials import MissingCredential
from hub.upstream.oauth import LINK_SECONDS, Credentials
from hub.upstream.signin import EXCHANGE_SECONDS, SIGN_IN_SECONDS, SignInFailed, sign_in

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult
    from starlette.types import Receive, Scope, Send

START = "/oauth/start"
FORM_LIMIT = 8192  # the confirmation's form: one link
CALLBACK = "/oauth/callback"
_log = structlog.get_logger("hub.http")
_PAGE = (
    "<!doctype html><html><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
    "<title>hub: sign-in</title></head><body style='font-family:system-ui;max-width:40em;margin:3em auto'>"
    "<h1>{title}</h1><p>{text}</p>{form}</body></html>"
)
_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"),
    (b"referrer-policy", b"no-referrer"),
]


@dataclass(eq=False)
class _Page(Exception):
    """A small page that answers the request (raised where the request cannot go on): `title` and `text` are
    escaped when it is written; `form` is markup made of escaped values."""

    status: int
    title: str
    text: str
    form: str = ""

    async def write(self, send: Send) -> None:
        body = _PAGE.format(title=html.escape(self.title), text=html.escape(self.text), form=self.form)
        await reply(send, self.status, body.encode(), _HEADERS)


@dataclass
class _Flow:
    """One sign-in in progress: the authorization URL once known, the code once the browser is back, the outcome."""

    child: str
    identity: str
    url: str | None = None
    shown: anyio.Event = field(default_factory=anyio.Event)
    code: AuthorizationCodeResult | None = None
    back: anyio.Event = field(default_factory=anyio.Event)
    error: str | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


class SignIns:
    """The sign-in flows in progress on this replica, by their OAuth `state`; each bounded in time."""

    def __init__(self, hub: HubPort, credentials: Credentials, base_url: str) -> None:
        self.hub = hub
        self.credentials = credentials
        self.redirect_uri = base_url + CALLBACK
        self._flows: dict[str, _Flow] = {}
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        """Host the flows until cancelled (the front's lifetime)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        try:
            if scope["path"] == START and scope["method"] == "POST":
                body = await read_body(receive, FORM_LIMIT, self.hub.settings.http.request_timeout)
                form = {k: v[0] for k, v in parse_qs((body.data or b"").decode("latin-1")).items()}
                location = await self._start(form.get("link", ""))
                await reply(send, 303, b"", [(b"location", location.encode()), (b"cache-control", b"no-store")])
                return
            if scope["method"] not in ("GET", "HEAD"):
                raise _Page(405, "Not allowed", "Sign-in pages are opened with GET.")
            page = await (self._confirm(query.get("link", "")) if scope["path"] == START else self._callback(query))
        except _Page as refused:
            page = refused
        await page.write(send)

    async def _confirm(self, link: str) -> _Page:
        """What the link is for, and a button: the sign-in starts only when the person says so (a link previewer or
        a mail scanner that opens it spends nothing), and names the identity it signs in, so that nobody signs
        their own account in under another's name by opening someone else's link."""
        payload = await self._opened(link)
        who, server = str(payload["i"]), str(payload["c"])
        form = (
            f"<form method=post action='{START}'><input type=hidden name=link value='{html.escape(link)}'>"
            f"<button type=submit>Sign in as {html.escape(who)}</button></form>"
        )
        text = (
            f"This signs identity '{who}' in to server '{server}': the hub will call that server with the "
            f"account you choose next. If you are not {who}, close this page."
        )
        return _Page(200, "Sign in", text, form)

    async def _opened(self, link: str) -> dict[str, Any]:
        payload = await self.credentials.open_link(link)
        if payload is None:
            why = f"This sign-in link is not valid or is older than {LINK_SECONDS // 60} minutes."
            raise _Page(400, "Link not valid", f"{why} Call the tool again for a new one.")
        return payload

    async def _start(self, link: str) -> str:
        """The flow started by a confirmed link: where to send the browser."""
        payload = await self._opened(link)
        child = self.hub.children.get(str(payload.get("c")))
        groups = payload.get("g") or []
        identity = Identity(str(payload["i"]), frozenset(str(g) for g in groups), "token")
        try:
            fresh = await self.hub.use_nonce(f"oauth:{payload.get('n')}", float(payload["x"]))
        except errors.HubError as exc:
            raise _Page(503, "Sign-in unavailable", exc.message) from None
        if not fresh:
            raise _Page(
                400, "Link already used", "This sign-in link was used before. Call the tool again for a new one."
            )
        if child is None or child.config.oauth is None:
            raise _Page(404, "No such server", "The server of this link is no longer in the configuration.")
        try:
            config = child.launch(identity)
        except MissingCredential as exc:
            raise _Page(403, "Not configured", str(exc)) from None
        flow = _Flow(child.name, identity.name)
        assert self._tg is not None
        self._tg.start_soon(self._run, flow, config)
        with anyio.move_on_after(EXCHANGE_SECONDS * 3):
            await flow.shown.wait()
        if flow.url is None:
            raise _Page(502, "Sign-in failed", flow.error or "The authorization server did not answer in time.")
        return flow.url

    async def _run(self, flow: _Flow, config: ServerConfig) -> None:
        state: str | None = None

        async def show(url: str) -> None:
            nonlocal state
            state = parse_qs(urlsplit(url).query).get("state", [""])[0]
            self._flows[state] = flow
            flow.url = url
            flow.shown.set()

        async def landed() -> AuthorizationCodeResult:
            await flow.back.wait()
            assert flow.code is not None
            return flow.code

        started = time.monotonic()
        try:
            await sign_in(self.credentials, flow.child, config, flow.identity, self.redirect_uri, show, landed)
            duration_ms = round((time.monotonic() - started) * 1000)
            _log.info("oauth_signed_in", child=flow.child, identity=flow.identity, duration_ms=duration_ms)
        except SignInFailed as exc:
            flow.error = flow.error or str(exc)  # the authorization server's own answer, if it gave one
            _log.warning("oauth_sign_in_failed", child=flow.child, identity=flow.identity, error=flow.error)
        finally:
            flow.shown.set()
            flow.done.set()
            if state is not None:
                self._flows.pop(state, None)

    async def _callback(self, query: dict[str, str]) -> _Page:
        from mcp.shared.auth import AuthorizationCodeResult

        flow = self._flows.get(query.get("state", ""))
        if flow is None:
            why = f"each is good for {SIGN_IN_SECONDS / 60:g} minutes, on the hub that started it"
            return _Page(400, "Unknown sign-in", f"No sign-in is waiting for this answer here ({why}).")
        if "error" in query or "code" not in query:
            flow.error = f"the authorization server said: {query.get('error', 'no code')}"
            flow.code = AuthorizationCodeResult(code="", state=query.get("state"))
        else:
            flow.code = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
        flow.back.set()
        with anyio.move_on_after(EXCHANGE_SECONDS * 2):
            await flow.done.wait()
        if flow.error is None and flow.done.is_set():
            signed = f"Identity '{flow.identity}' is signed in to server '{flow.child}'."
            return _Page(200, "Signed in", f"{signed} You can close this page and call its tools again.")
        return _Page(502, "Sign-in failed", flow.error or "The token exchange did not finish in time.")

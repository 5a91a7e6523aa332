"""The status page on the HTTP front: `GET /` (or `/status`) for a person, `GET /status.json` for a script, and
`/login` for browsers (who may see it, and the `hub_token` cookie: docs/operations.md#the-status-page).

The page names who called what and shows error messages, so with `auth:` it is for `auth.status_group` and
`auth.admin_group` only, not `metrics_group`. The cookie is read on the status page's own GETs only (never on /mcp,
/metrics or /reload, so it cannot be used to act across sites), and the token in it is checked on every request.
Every response carries a strict Content-Security-Policy; the page's inline style and script run under a nonce.
"""

from __future__ import annotations

import json
import re
import secrets
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from hub.access.identity import ANONYMOUS, Identity
from hub.host.http_auth import MAX_TOKEN_CHARS, Authenticator, Refusal
from hub.host.http_checks import Checks
from hub.host.http_replies import JSON, headers_of, insufficient_scope, read_body, reply
from hub.host.port import HubPort
from hub.host.status_page import render_live, render_login, render_refused, render_status
from hub.observe.status import ListingTokens, snapshot

PAGES = frozenset({"/", "/status"})
DATA = "/status.json"
PATHS = frozenset({*PAGES, DATA, "/login", "/logout"})
COOKIE = "hub_token"
COOKIE_HOURS = 12
# A sign-in form holds one token: anything larger is not one.
FORM_LIMIT = MAX_TOKEN_CHARS + 1024
_ALLOW = {"/login": b"GET, HEAD, POST", "/logout": b"POST"}
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]+")
# Every status-page response: never cached, never content-sniffed.
_PRIVATE = [(b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]
_JSON = [*JSON, *_PRIVATE]


def _html_headers(nonce: str) -> list[tuple[bytes, bytes]]:
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
        "img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    return [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-security-policy", policy.encode()),
        *_PRIVATE,
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),  # no-referrer would make a form's Origin "null"
    ]


def _cookie(header: str) -> str | None:
    """The `hub_token` cookie's value, if it has the shape of a token."""
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value and len(value) <= MAX_TOKEN_CHARS and _TOKEN.fullmatch(value):
            return value
    return None


def _set_cookie(value: str, max_age: int) -> tuple[bytes, bytes]:
    attributes = f"{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; Secure; SameSite=Strict"
    return b"set-cookie", attributes.encode()


class StatusPage:
    """The routes in `PATHS`; the contract is the module docstring."""

    def __init__(self, hub: HubPort, checks: Checks, auth: Authenticator) -> None:
        self.hub = hub
        self.checks = checks
        self.auth = auth
        self.tokens = ListingTokens()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await self.checks.refused(scope, receive, send, json_post=False):
            return
        path, method = scope["path"], scope["method"]
        if path == "/login" and method in ("GET", "HEAD", "POST") and self.hub.auth_config is None:
            await reply(send, 303, b"", [(b"location", b"./")])  # nobody signs in: the page is open
        elif method == "POST" and path == "/login":
            await self._sign_in(receive, send)
        elif method == "POST" and path == "/logout":
            await reply(send, 303, b"", [(b"location", b"login"), _set_cookie("", 0)])
        elif method not in ("GET", "HEAD") or path == "/logout":
            allow = _ALLOW.get(path, b"GET, HEAD")
            await reply(send, 405, b'{"error":"method not allowed"}', [*_JSON, (b"allow", allow)])
        elif path == "/login":
            await self._login_page(send, 200)
        else:
            await self._show(scope, send, as_json=path == DATA)

    async def _show(self, scope: Scope, send: Send, as_json: bool) -> None:
        viewer = await self._viewer(scope, send, as_json)
        if viewer is None:
            return
        assert self.hub.recent is not None  # the hub is built with it for the HTTP front
        data = snapshot(self.hub, self.hub.recent, self.tokens, self.hub.redact)
        if as_json:
            await reply(send, 200, json.dumps(data).encode(), _JSON)
            return
        nonce = secrets.token_urlsafe(16)
        if b"part=live" in scope.get("query_string", b""):
            page = render_live(data, signed_in=viewer[1])
        else:
            page = render_status(data, nonce, signed_in=viewer[1])
        await reply(send, 200, page.encode(), _html_headers(nonce))

    async def _viewer(self, scope: Scope, send: Send, as_json: bool) -> tuple[Identity, bool] | None:
        """Who is looking, and whether through the cookie; None if refused (and answered)."""
        if self.hub.auth_config is None:
            return ANONYMOUS, False
        headers = headers_of(scope)
        cookie = None if "authorization" in headers else _cookie(headers.get("cookie", ""))
        if cookie is not None:
            headers["authorization"] = f"Bearer {cookie}"
        found = await self.auth.identify(headers, scope.get("query_string", b""))
        if isinstance(found, Refusal):
            if as_json or found.status != 401:
                await self.auth.refuse(scope, send, found)
            else:
                why = "Your sign-in is no longer valid: sign in again." if cookie is not None else ""
                await self._login_page(send, 401, why)
            return None
        if not await self._allowed(found, send, as_json):
            return None
        return found, cookie is not None

    async def _allowed(self, identity: Identity, send: Send, as_json: bool) -> bool:
        """Whether `identity` may see the page (answered if not: 403)."""
        config = self.hub.auth_config
        assert config is not None
        groups = (config.status_group, config.admin_group)
        if identity.in_any(set(groups)):
            return True
        if as_json:
            await insufficient_scope(send, groups, _JSON)
        else:
            nonce = secrets.token_urlsafe(16)
            needed = " or ".join(repr(g) for g in groups)
            message = f"{identity.name} may not see the status page: it is for members of {needed}."
            await reply(send, 403, render_refused(nonce, message).encode(), _html_headers(nonce))
        return False

    async def _login_page(self, send: Send, status: int, message: str = "") -> None:
        nonce = secrets.token_urlsafe(16)
        extra = [(b"www-authenticate", b'Bearer realm="hub"')] if status == 401 else []
        page = render_login(nonce, COOKIE_HOURS, message)
        await reply(send, status, page.encode(), [*_html_headers(nonce), *extra])

    async def _sign_in(self, receive: Receive, send: Send) -> None:
        """POST /login: the form's token checked as a bearer token; if its identity may see the page, the cookie."""
        body = (await read_body(receive, FORM_LIMIT, self.hub.settings.http.request_timeout)).data
        if body is None:
            await self._login_page(send, 400, "The form did not arrive whole; try again.")
            return
        token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()
        if not token or len(token) > MAX_TOKEN_CHARS or not _TOKEN.fullmatch(token):
            await self._login_page(send, 401, "That is not an access token.")
            return
        found = await self.auth.identify({"authorization": f"Bearer {token}"}, b"")
        if isinstance(found, Refusal):
            await self._login_page(send, 401, f"Not signed in: {found.description}.")
        elif await self._allowed(found, send, as_json=False):
            await reply(send, 303, b"", [(b"location", b"./"), _set_cookie(token, COOKIE_HOURS * 3600)])

"""A host inside the hub's own process: what `hub check`, `hub list` and `hub call` talk to the hub through.

It is a host like any other (a `HostSession` whose stream is a callback), so the command line sees exactly what a
host over stdio sees, along the same path. Given a `confirm` callback (`hub call` on a terminal), it declares
elicitation and answers the hub's confirmation questions (`confirm:` in servers.yaml) with it; any other request
of the hub's is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from hub.host.port import HubPort
from hub.host.session import HostSession
from hub.protocol.jsonrpc import METHOD_NOT_FOUND, Request, Response, error_line, parse, request_line, result_line
from hub.protocol.revisions import CLIENT_INFO, LATEST_HANDSHAKE


class HostError(Exception):
    """The hub answered with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('message')} (code {error.get('code')})")
        self.error = error


Confirm = Callable[[str], Awaitable[bool]]  # the question's text -> the person's yes


class InProcessHost:
    def __init__(self, hub: HubPort, confirm: Confirm | None = None) -> None:
        self.session = HostSession(hub, "in-process", self, identity=hub.local)
        self._hub = hub
        self._confirm = confirm
        self._ids = itertools.count(1)
        self._waiting: dict[Any, tuple[anyio.Event, list[Response]]] = {}

    # ---- the session's stream ----------------------------------------------------------------------------

    def send(self, line: bytes) -> None:
        message = parse(line)
        if isinstance(message, Response) and message.id in self._waiting:
            event, box = self._waiting.pop(message.id)
            box.append(message)
            event.set()
        elif isinstance(message, Request):  # the hub asks its host something (a confirmation)
            self._hub.spawn(self._answer, message)

    async def _answer(self, request: Request) -> None:
        if request.method == "elicitation/create" and self._confirm is not None:
            text = request.params.get("message")
            yes = await self._confirm(text if isinstance(text, str) else "Confirm?")
            answer = {"action": "accept", "content": {"confirm": True}} if yes else {"action": "decline"}
            line = result_line(request.id, answer)
        else:
            line = error_line(request.id, METHOD_NOT_FOUND, f"hub call cannot answer {request.method}")
        self.session.receive(line.rstrip(b"\n"), self)

    def end(self, line: bytes | None) -> None:
        if line is not None:
            self.send(line)

    # ---- requests --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        capabilities: dict[str, Any] = {"elicitation": {}} if self._confirm is not None else {}
        await self.request(
            "initialize",
            {"protocolVersion": LATEST_HANDSHAKE, "capabilities": capabilities, "clientInfo": CLIENT_INFO},
        )
        self.session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', self)

    async def request(self, method: str, params: dict[str, Any], limit_s: float = 600.0) -> dict[str, Any]:
        """Send one request and wait (bounded) for its answer.

        Raises:
            HostError: the hub answered with an error.
            TimeoutError: no answer within `limit_s`.
        """
        request_id = next(self._ids)
        event, box = anyio.Event(), list[Response]()
        self._waiting[request_id] = (event, box)
        self.session.receive(request_line(request_id, method, params).rstrip(b"\n"), self)
        with anyio.fail_after(limit_s):
            await event.wait()
        response = box[0]
        if response.error is not None:
            raise HostError(response.error)
        return response.result or {}

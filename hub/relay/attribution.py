"""Which host a child's own request (sampling, elicitation, roots), log message or URL-mode elicitation's completion
belongs to. Nothing on the wire ties it to the host request that caused it, so it goes, in this order, to: the
session that created the task it names (`relatedTask`); for `roots/list`, the session itself (decision 017); the one
session whose requests are in flight on the connection (a 2026-07-28 host's call gets it as an input-required
round); with none in flight, the session that owns the connection or the only one there is. With several sessions
it cannot tell, so it refuses (naming `sessions: per-host`) rather than ask the wrong one, and a log message is not
forwarded. The rules, for users: docs/protocols.md, "Which host session a child's request belongs to".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import structlog

from hub.protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, Request, quote
from hub.relay.call import ASKS, Call, refusal
from hub.relay.hosts import Hosts, Session
from hub.relay.ports import AskFailed, SessionPort
from hub.upstream.child import Child
from hub.upstream.connection import Connection

# Several host sessions share a child and none of their requests is in flight: the fix to name.
PER_HOST_HINT = (
    "; set 'sessions: per-host' for this server in servers.yaml so that each host session has a connection of its own"
)
# Methods a 2026-07-28 host can be asked something during (as an input-required round).
ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
# A child's requests about the host session itself, never about one call (server-filesystem asks for roots again on
# roots/list_changed, whatever call is in flight): asked on the session's own channel (decision 017).
SESSION_ASKS = frozenset({"roots/list"})
Spawn = Callable[..., None]  # runs a coroutine function with its arguments in the relay's task group
Ask = Callable[[str, dict[str, Any], float], Awaitable[dict[str, Any]]]  # a session's or a host request's `ask`
ForTask = Callable[[Connection, Request, str], bool]  # whether a request belongs to a task the hub runs (handled)
# URL-mode elicitations kept per connection until they complete (the oldest is forgotten past this).
URL_ELICITATIONS_KEPT = 1024
ELICITATION_COMPLETE = "notifications/elicitation/complete"

_log = structlog.get_logger("hub.relay")


def _level(params: dict[str, Any]) -> str:
    """A child's log level, for the hub's own log: as it came if a string (long ones are cut there), else quoted."""
    level = params.get("level")
    return level if isinstance(level, str) else quote(level)


@dataclass(frozen=True)
class Ambiguous:
    """Requests of several host sessions are in flight on one connection: no single owner."""

    sessions: int


def owner_of(inflight: dict[Call, None]) -> Call | Ambiguous | None:
    """The newest call in flight (`inflight` is oldest first), if one host session owns them all."""
    if not inflight:
        return None
    sessions = {call.attribution for call in inflight}
    if len(sessions) > 1:
        return Ambiguous(len(sessions))
    return next(reversed(inflight))


def _in_round(call: Call) -> bool:
    """A 2026-07-28 host's call (or one parked between its rounds): what the child asks becomes an input round."""
    return call.request is None or call.modern_host


async def ask_host(ask: Ask, connection: Connection, request: Request, limit_s: float) -> None:
    """Ask a host the child's `request` and answer the child with what the host says, or with its error."""
    try:
        result = await ask(request.method, request.params, limit_s)
    except AskFailed as failure:
        connection.respond(request.id, error=failure.error)
        return
    connection.respond(request.id, result)


class Attribution:
    def __init__(self, spawn: Spawn, hosts: Hosts, for_task: ForTask | None = None) -> None:
        self._spawn = spawn  # the relay's task group (hub.relay.inflight)
        self.hosts = hosts
        self._for_task = for_task  # a request naming a task the hub runs goes to its owner (hub.relay.task_runner)
        # The session asked each URL-mode elicitation, by connection and elicitationId, until it completes.
        self._url_asked: WeakKeyDictionary[Connection, dict[str, SessionPort]] = WeakKeyDictionary()

    def child_request(self, child: Child, connection: Connection, request: Request) -> None:
        kind = ASKS.get(request.method)
        if kind is None:
            why = f"hub: {request.method!r} is not relayed to hosts"
            connection.respond(request.id, error={"code": METHOD_NOT_FOUND, "message": why})
            return
        if self._for_task is not None and self._for_task(connection, request, kind):
            return  # it names a task's `relatedTask`: the session that created the task is asked
        owner = owner_of(connection.inflight)
        if request.method in SESSION_ASKS and isinstance(owner, Call) and not _in_round(owner):
            self._to_session(child, connection, request, kind, owner.session)
        elif isinstance(owner, Ambiguous):
            _log.warning("child_request_ambiguous", child=child.name, kind=kind, host_sessions=owner.sessions)
            why = (
                f"hub: requests of {owner.sessions} host sessions are in flight to server '{child.name}', so the hub "
                f"cannot tell which one its {kind} request belongs to and refuses it rather than ask the wrong one; "
                "set 'sessions: per-host' for this server in servers.yaml"
            )
            connection.respond(request.id, error={"code": INVALID_REQUEST, "message": why})
        elif owner is not None:
            self._during_call(owner, connection, request, kind)
        else:
            self._to_session(child, connection, request, kind, self._session_of(connection))

    def _session_of(self, connection: Connection) -> Session | None:
        """The session a connection's message goes to outside any call: the one that owns the connection, else the
        only one there is (of the connection's identity, for a connection opened for one)."""
        return connection.owner if connection.owner is not None else self.hosts.only(connection.identity)

    def _to_session(
        self, child: Child, connection: Connection, request: Request, kind: str, session: SessionPort | None
    ) -> None:
        """Ask `session` on its own channel, outside any of its requests."""
        if session is None or session.modern:
            shared = len(self.hosts.sessions)
            why = (
                f"hub: no host request is in flight to server '{child.name}' and {shared} host sessions are "
                f"connected, so its {kind} request has no host to go to" + (PER_HOST_HINT if shared > 1 else "")
            )
            connection.respond(request.id, error={"code": INVALID_REQUEST, "message": why})
        elif not session.declared(kind):
            connection.respond(request.id, error=refusal(kind, child.name))
        else:
            self._asking(connection, request, session)
            self._spawn(ask_host, session.ask, connection, request, child.config.timeout)

    def _during_call(self, call: Call, connection: Connection, request: Request, kind: str) -> None:
        host = call.request
        if host is None or call.modern_host:  # as `_in_round`
            if call.method in ROUND_METHODS:
                call.hold(request)
            else:
                why = (
                    f"hub: server '{call.child.name}' sent a {kind} request during a {call.method} request of a "
                    "2026-07-28 host, which has no server-to-client requests and no input-required round for "
                    f"{call.method}"
                )
                connection.respond(request.id, error={"code": INVALID_REQUEST, "message": why})
        elif not host.declared(kind):
            connection.respond(request.id, error=refusal(kind, call.child.name))
        else:
            self._asking(connection, request, host.session)
            self._spawn(ask_host, host.ask, connection, request, call.window)

    def _asking(self, connection: Connection, request: Request, session: SessionPort) -> None:
        """A URL-mode elicitation about to be asked of `session`: its completion will be that session's."""
        if request.method == "elicitation/create":
            self._remember(connection, request.params, session)

    def elicitations_required(self, connection: Connection, exchange: object, data: Any) -> None:
        """A call answered -32042: the URL-mode elicitations its error names complete for the call's session."""
        elicitations = data.get("elicitations") if isinstance(data, dict) else None
        if isinstance(exchange, Call) and not _in_round(exchange) and isinstance(elicitations, list):
            for elicitation in elicitations:
                if isinstance(elicitation, dict):
                    self._remember(connection, elicitation, exchange.session)

    def _remember(self, connection: Connection, elicitation: dict[str, Any], session: SessionPort) -> None:
        elicitation_id = elicitation.get("elicitationId")
        if elicitation.get("mode") == "url" and isinstance(elicitation_id, str):
            asked = self._url_asked.setdefault(connection, {})
            asked.pop(elicitation_id, None)
            asked[elicitation_id] = session
            if len(asked) > URL_ELICITATIONS_KEPT:
                del asked[next(iter(asked))]

    def elicitation_complete(self, child: Child, connection: Connection, params: dict[str, Any]) -> None:
        """A child's `notifications/elicitation/complete`: to the session asked that elicitation, and only to it."""
        elicitation = params.get("elicitationId")
        asked = self._url_asked.get(connection, {}).pop(elicitation, None) if isinstance(elicitation, str) else None
        session = self.hosts.connected(asked) if asked is not None else self._session_of(connection)
        if session is None or session.modern:
            _log.info("child_elicitation_complete_unrouted", child=child.name, elicitation=quote(elicitation))
            return
        session.notify(ELICITATION_COMPLETE, params)

    def child_log(self, child: Child, connection: Connection, params: dict[str, Any]) -> None:
        logger = params.get("logger")
        params = {**params, "logger": f"{child.name}/{logger}" if isinstance(logger, str) and logger else child.name}
        owner = owner_of(connection.inflight)
        if isinstance(owner, Ambiguous):
            _log.info("child_log_unrouted", child=child.name, level=_level(params), host_sessions=owner.sessions)
        elif owner is not None:
            if owner.request is not None:
                owner.request.log(params)
            else:
                _log.info("child_log_unrouted", child=child.name, level=_level(params), reason="between rounds")
        elif connection.owner is not None:
            connection.owner.log(params)
        else:
            self.hosts.log(params, connection.identity)

"""Which host a child's own request (sampling, elicitation, roots) or log message belongs to.

Nothing on the wire ties a child's `sampling/createMessage` to the `tools/call` that caused it. Each connection to
a child keeps the host requests in flight on it (`Connection.inflight`, oldest first), and a child's request goes to:

- a request that names a task the hub runs (`relatedTask`), the host session that created it (hub.relay.tasks);
- the one session all of them belong to, on the stream of its newest request (a 2026-07-28 host's request belongs
  to no session and gets it as an input-required round instead);
- with none in flight, the session that owns the connection (`sessions: per-host`), or the one host session there
  is (always so over stdio); with several sessions, or none yet, the child gets an error (naming the fix,
  `sessions: per-host`; a host that declares roots when it connects has the children told
  `notifications/roots/list_changed`, so that they ask again: `hub.host.session`);
- with several sessions in flight, nobody: the hub cannot tell which one caused it, so it refuses (naming the fix)
  rather than ask the wrong person.

A log message follows the same rule, except that with nothing in flight it goes to every handshake-era session (a
shared child belongs to all), and with several sessions in flight to none (one user's data must not reach another's
session): the hub logs it instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from hub.protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, Request, quote
from hub.relay.call import ASKS, Call, refusal
from hub.relay.hosts import Hosts, Session
from hub.relay.ports import AskFailed
from hub.upstream.child import Child
from hub.upstream.connection import Connection

# Several host sessions share a child and none of their requests is in flight: the fix to name.
PER_HOST_HINT = (
    "; set 'sessions: per-host' for this server in servers.yaml so that each host session has a connection of its own"
)
# Methods a 2026-07-28 host can be asked something during (as an input-required round).
ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
Spawn = Callable[..., None]  # runs a coroutine function with its arguments in the relay's task group
ForTask = Callable[[Connection, Request, str], bool]  # whether a request belongs to a task the hub runs (handled)

_log = structlog.get_logger("hub.relay")


def _level(params: dict[str, Any]) -> str:
    """A child's log level, for the hub's own log: as it came if a string (long ones are cut there), else quoted."""
    level = params.get("level")
    return level if isinstance(level, str) else quote(level)


class Ambiguous:
    """Requests of several host sessions are in flight on one connection: no single owner."""

    def __init__(self, sessions: int) -> None:
        self.sessions = sessions


def owner_of(inflight: dict[Call, None]) -> Call | Ambiguous | None:
    """The newest call in flight (`inflight` is oldest first), if one host session owns them all."""
    if not inflight:
        return None
    sessions = {call.attribution for call in inflight}
    if len(sessions) > 1:
        return Ambiguous(len(sessions))
    return next(reversed(inflight))


class Attribution:
    def __init__(self, spawn: Spawn, hosts: Hosts, for_task: ForTask | None = None) -> None:
        self._spawn = spawn  # the relay's task group (hub.relay.inflight)
        self.hosts = hosts
        self._for_task = for_task  # a request naming a task the hub runs goes to its owner (hub.relay.task_runner)

    def child_request(self, child: Child, connection: Connection, request: Request) -> None:
        kind = ASKS.get(request.method)
        if kind is None:
            why = f"hub: {request.method!r} is not relayed to hosts"
            connection.respond(request.id, error={"code": METHOD_NOT_FOUND, "message": why})
            return
        if self._for_task is not None and self._for_task(connection, request, kind):
            return  # it names a task's `relatedTask`: the session that created the task is asked
        owner = owner_of(connection.inflight)
        if isinstance(owner, Ambiguous):
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
            session: Session | None = (
                connection.owner if connection.owner is not None else self.hosts.only(connection.identity)
            )
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
                self._spawn(self._ask, session.ask, connection, request, child.config.timeout)

    def _during_call(self, call: Call, connection: Connection, request: Request, kind: str) -> None:
        host = call.request
        if host is None or call.modern_host:
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
            self._spawn(self._ask, host.ask, connection, request, call.window)

    @staticmethod
    async def _ask(ask: Any, connection: Connection, request: Request, limit_s: float) -> None:
        try:
            result = await ask(request.method, request.params, limit_s)
        except AskFailed as failure:
            connection.respond(request.id, error=failure.error)
            return
        connection.respond(request.id, result)

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

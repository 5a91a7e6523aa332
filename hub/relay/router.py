"""Routing a host's request to the child that owns what it names: route -> admission -> call, the composition of
the relay's stages (docs/architecture.md). An unknown name is a -32602 naming it, a name whose child is down an error
naming the child and why; a call to a child still starting with the hub waits for it (bounded) instead of failing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from hub.access.policy import ALLOWED
from hub.config.settings import HubSettings
from hub.protocol import errors, revisions
from hub.relay.admission import SUBSCRIPTIONS, Admission
from hub.relay.apps import AmbiguousOwnName
from hub.relay.builtins import HEALTH_TOOL, Builtins, Forwarded
from hub.relay.call import Call, answer_error
from hub.relay.catalog import CALL_TOOL, GATEWAY_TOOLS, SEARCH_TOOL, Catalog, Route
from hub.relay.deadlines import Deadlines
from hub.relay.exposure import NO_RULES
from hub.relay.hosts import Hosts
from hub.relay.inflight import InFlight
from hub.relay.ports import HostRequest
from hub.relay.record import Record, cut
from hub.relay.rounds import PARKED, ROUND_PREFIX, named, unknown_round
from hub.relay.task_records import TASK_METHODS
from hub.relay.tasks import Tasks
from hub.upstream.child import Child, ChildState

ROUTED = frozenset(
    {"tools/call", "resources/read", "prompts/get", "completion/complete", *SUBSCRIPTIONS, *TASK_METHODS}
)
_log = structlog.get_logger("hub")


class Router:
    """Routes each request through the stages it is given at construction: nothing is set on it afterwards."""

    def __init__(
        self,
        catalog: Catalog,
        hosts: Hosts,
        record: Record,
        settings: Callable[[], HubSettings],
        builtins: Builtins,
        starting: Callable[[list[Child]], Awaitable[None]],
        admission: Admission,
        redact: Callable[[Any], Any],
    ) -> None:
        self.catalog = catalog
        self.admission = admission
        self.seals = admission.seals
        self.hosts = hosts
        self.record = record
        self.settings = settings
        self.builtins = builtins
        self._wait_for_start = starting  # bounded wait for children still starting with the hub
        self.flight = InFlight()
        self.deadlines: Deadlines = self.flight.deadlines  # read by every call: a plain attribute, not a property
        self.run = self.flight.run  # the relay's tasks (hub.relay.inflight), started with `task_group.start`
        self.spawn = self.flight.spawn
        self.wait_idle = self.flight.wait_idle
        self.last_request = 0.0  # when the last routed request arrived (monotonic): the drain waits for quiet
        self.redact = redact  # `redact_output`: a result with the secrets the hub knows replaced
        self.tasks = Tasks(  # the tasks the hub hands out (hub.relay.tasks), for any identity its policy allows
            admission.shared,
            record,
            hosts,
            record.replica,
            self.spawn,
            lambda identity, tool: admission.decide(identity, tool, catalog.namespace.writes(tool)).allowed,
        )

    @property
    def in_flight(self) -> int:
        return self.flight.count

    def route(self, request: HostRequest, waited: bool = False) -> None:
        """Answer a routed request (now, or when its call ends). `waited`: its children still starting were waited
        for once already."""
        self.last_request = time.monotonic()
        method, params = request.method, request.params
        namespace = self.catalog.namespace
        try:
            if method == "tools/call":
                self._tool_call(request, waited)
            elif method in TASK_METHODS:
                self.tasks.handle(request)
            elif method == "prompts/get":
                name = _string(params, "name")
                _object(params, "arguments")
                route = namespace.prompt_routes.get(name)
                self._dispatch(request, waited, "prompt", name, route, _renamed(params, "name", route))
            elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
                uri = _string(params, "uri")
                route = namespace.route_uri(uri)
                if route is not None and route.child not in self.catalog.children:
                    route = None
                self._dispatch(request, waited, "resource", uri, route, _renamed(params, "uri", route))
            elif method == "completion/complete":
                ref = params.get("ref")
                if not isinstance(ref, dict):
                    raise errors.BadRequest("invalid params: 'ref' must be an object")
                key = "name" if ref.get("type") == "ref/prompt" else "uri"
                name = _string(ref, key)
                if key == "name":
                    route = namespace.prompt_routes.get(name)
                else:
                    route = namespace.template_routes.get(name) or namespace.route_uri(name)
                renamed = {**params, "ref": _renamed(ref, key, route)}
                self._dispatch(request, waited, "prompt or resource template", name, route, renamed)
            else:
                raise errors.BadRequest(f"{method} is not routed")
        except errors.HubError as error:
            self.refuse(request, error)

    def _tool_call(self, request: HostRequest, waited: bool) -> None:
        params, namespace = request.params, self.catalog.namespace
        name = _string(params, "name")
        _object(params, "arguments")
        state = params.get("requestState")
        if isinstance(state, str) and state.startswith(ROUND_PREFIX):
            payload = self.seals.peek(state)
            kind = None if payload is None else payload.get("k")
            # A parked call's round is resumed here; a confirmation's round, or a state that does not open for a
            # tool under `confirm:`, is admission's to judge (and to name what is wrong with it).
            if kind == PARKED or (kind is None and not namespace.tool_rules.get(name, NO_RULES).confirm):
                self._resume(request, name, payload)
                return
        route = namespace.tool_routes.get(name)
        if route is None and name in (HEALTH_TOOL, SEARCH_TOOL, CALL_TOOL) and name in self.catalog.reserved():
            self._gateway(request, name, waited)
            return
        # An app's call by a server's own tool name is resolved once every server that could have that name has
        # listed its tools: while one is still starting, its tools are not known, and one candidate is a guess.
        if route is None and (waited or all(c.settled.is_set() for c in self._possible_owners(name))):
            app = self._own_name(request, name)
            if app is not None:
                name, route = app, namespace.tool_routes[app]
        self._dispatch(request, waited, "tool", name, route, _renamed(params, "name", route))

    def _gateway(self, request: HostRequest, name: str, waited: bool) -> None:
        """A call of one of the hub's own tools (hub.relay.builtins). The gateway tools answer only with what the
        caller's policy allows: their own names are not decided."""
        decision = ALLOWED if name in GATEWAY_TOOLS else self.admission.decide(request.session.identity, name, False)
        if not decision.allowed:
            raise errors.Denied(errors.UnknownName(f"Unknown tool: {named(name)}"), decision.rule)
        if name == HEALTH_TOOL:
            self.builtins.health(request, decision.rule)
        elif name == SEARCH_TOOL:
            try:
                self.builtins.search(request, decision.rule)
            except errors.HubError as error:
                self.refuse(request, error, "hub", decision.rule)
        else:  # the named tool's own call, routed as if the host had sent it; the model's, so not an app's
            forwarded = Forwarded(request)
            if forwarded.params["name"] in self.catalog.namespace.app_only:
                raise errors.ArgumentRefused(
                    f"tool {named(forwarded.params['name'])} is for its app only (_meta.ui.visibility)", "name"
                )
            self._tool_call(forwarded, waited)

    def _own_name(self, request: HostRequest, name: str) -> str | None:
        """An app's call by its server's own tool name (hub.relay.apps): the exposed name of the one tool of that
        own name the caller's policy lets it use, then routed and admitted as that name; never a guess."""
        namespace, identity = self.catalog.namespace, request.session.identity
        try:
            return namespace.own_names.resolve(
                name, lambda exposed: self.admission.decide(identity, exposed, namespace.writes(exposed)).allowed
            )
        except AmbiguousOwnName as exc:
            raise errors.UnknownName(
                f"Ambiguous tool: {named(name)} is the own name of tools of several servers "
                f"({', '.join(exc.exposed)}): call one of them by that name",
                {"candidates": list(exc.exposed)},
            ) from None

    def _unrouted(self, request: HostRequest, waited: bool, kind: str, exposed: str) -> None:
        """A name no child serves (yet): wait for the children still starting that could serve it, else fail."""
        starting = [c for c in self._possible_owners(exposed) if not c.settled.is_set()]
        if starting and not waited:
            self.spawn(self._after_start, request, starting)
            return
        # Said of a name that carries the child's prefix (or of an unprefixed child): not of any name at all.
        down = [c for c in self._possible_owners(exposed) if c.state is not ChildState.READY and _carries(exposed, c)]
        if down and kind == "tool":  # the host may know the name from before: say why it is gone
            raise errors.Unavailable(f"tool {named(exposed)} is not available: {down[0].unavailable_reason()}")
        raise errors.UnknownName(f"Unknown {kind}: {named(exposed)}")

    def _possible_owners(self, name: str) -> list[Child]:
        """The children whose prefix `name` carries (or that have none): one of them may own it once it is up. A
        name with none of the prefixes may be any child's own name for a tool (an app's call: hub.relay.apps)."""
        children = self.catalog.children.values()
        owners = [c for c in children if c.prefix and _carries(name, c)]
        return [c for c in children if owners == [] or not c.prefix or c in owners]

    async def _after_start(self, request: HostRequest, starting: list[Child]) -> None:
        _log.info("call_waits_for_start", name=cut(_name(request)), servers=[c.name for c in starting])
        await self._wait_for_start(starting)
        self.route(request, waited=True)

    def _dispatch(
        self, request: HostRequest, waited: bool, kind: str, exposed: str, route: Route | None, params: dict[str, Any]
    ) -> None:
        namespace = self.catalog.namespace
        decision = self.admission.decide(
            request.session.identity, exposed, kind == "tool" and namespace.writes(exposed)
        )
        if route is None or not decision.allowed:
            held = namespace.held_back.get(exposed) if kind in ("tool", "prompt") and decision.allowed else None
            if held is not None:
                raise errors.HeldBack(*held)
            # What the caller may not use answers as what does not exist, by the same steps.
            try:
                self._unrouted(request, waited, kind, exposed)
            except errors.HubError as error:
                raise error if decision.allowed else errors.Denied(error, decision.rule) from None
            return
        if self.flight.taken(request):
            raise errors.InvalidRequest(
                f"invalid request: request id {named(request.id)} is already in flight on this connection"
            )
        rules = namespace.tool_rules.get(exposed, NO_RULES) if kind == "tool" else NO_RULES
        if rules.confirm or self.admission.per_minute(request) is not None:
            self.flight.stage(request, self._admit, request, route, exposed, params, decision.rule)
            return
        if rules is not NO_RULES:
            try:
                params = self.admission.arguments(exposed, params, rules)
            except errors.HubError as error:
                self.refuse(request, error, route.child, decision.rule)
                return
        self.start_call(request, route, exposed, params, decision.rule)

    async def _admit(
        self, request: HostRequest, route: Route, exposed: str, params: dict[str, Any], rule: str | None
    ) -> None:
        """The admission steps that wait, as a staged step: the identity's rate window before anything else of the
        request, then its arguments and, for a tool under `confirm:`, its user's explicit yes."""
        rules = self.catalog.namespace.tool_rules.get(exposed, NO_RULES) if request.method == "tools/call" else NO_RULES
        try:
            if self.admission.per_minute(request) is not None:
                await self.admission.take_rate(request.session.identity)
            params = self.admission.arguments(exposed, params, rules)
            if rules.confirm:
                if not await self.admission.confirmed(request, route, exposed, rule):
                    return  # a 2026-07-28 host was sent the question; its answer comes as a request of its own
                params = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
            # Refused too if its identity reached its limit in flight while it waited.
            self.start_call(request, route, exposed, params, rule, "accepted" if rules.confirm else None)
        except errors.HubError as error:
            self.refuse(request, error, route.child, rule)

    def start_call(
        self,
        request: HostRequest,
        route: Route,
        exposed: str,
        params: dict[str, Any],
        rule: str | None,
        confirmed: str | None = None,
    ) -> None:
        """Make the admitted request a call: counted against its identity's limits (refused first, before anything
        starts), its params as the child gets them, its span; then started on its connection."""
        child = self.catalog.children.get(route.child)
        try:
            if child is None:  # removed by a reload while the request waited (its count, its confirmation)
                raise errors.Unavailable(f"server '{route.child}' was removed")
            tasked = self.tasks.asked(request, child, exposed, route.original)
        except errors.HubError as error:
            self.refuse(request, error, route.child, rule)
            return
        quota = self.admission.take_quota(request)  # raises RateLimited
        meta = revisions.child_meta(params.get("_meta"))
        child_params = {k: v for k, v in params.items() if k != "_meta"}
        creation = self.tasks.creation(request, child, exposed, rule) if tasked else None
        if creation is not None:
            request = creation  # its answer, the child's task, becomes the hub's own (hub.relay.tasks)
            child_params.setdefault("task", {})
        call = Call(self, request, child, exposed, route.original, child_params)
        if creation is not None:
            creation.call = call
        call.quota, call.rule, call.confirmation = quota, rule, confirmed
        call.span = span = self.record.span(request, exposed, params.get("_meta"))
        if span is not None:
            span.set_child(child.name)
            meta = {**meta, **span.child_meta()}  # the child's work joins the host's trace
        if meta:
            child_params["_meta"] = meta
        subscription = request.method in SUBSCRIPTIONS
        if subscription and not self._tell_child(request, exposed):
            request.respond(b"{}")
            self.log_call(call, "ok", None, 0)
            return
        self.flight.add(request, call)
        # A subscription is the shared connection's (it outlives a session's); a call the session's or identity's
        # own connection where the child keeps one (`sessions: per-host`, `per-identity`).
        if not subscription and (child.per_identity or (child.per_host and not revisions.is_modern(request.version))):
            own = child.session_connection(_owner(call))
            if own is None:
                self.spawn(self._start_on_own_connection, call)
            else:
                call.start(own)
        else:
            call.start()

    def _tell_child(self, request: HostRequest, uri: str) -> bool:
        """Whether the child must be told: only on a URI's first subscription and last unsubscription of all hosts."""
        session: Any = request.session
        if request.method == "resources/subscribe":
            return self.hosts.subscribe(session, uri)
        return self.hosts.unsubscribe(session, uri)

    async def _start_on_own_connection(self, call: Call) -> None:
        try:
            capabilities = call.request.client_capabilities() if call.request is not None else None
            connection = await call.child.open_session_connection(_owner(call), capabilities)
        except errors.HubError as error:
            call.finish(error)
            return
        if not call.done:
            call.start(connection)

    def refuse(
        self, request: HostRequest, error: errors.HubError, child: str | None = None, rule: str | None = None
    ) -> None:
        """Answer a request that never became a call; it is logged like one."""
        started = time.perf_counter()
        size = answer_error(request, error)
        rule = error.rule if isinstance(error, errors.Denied) else rule
        span = self.record.span(request, _name(request), request.params.get("_meta"))
        self.record.line(request, child, _name(request), None, started, error.outcome, error, size, None, rule, span)

    # ---- what a call needs of the relay (hub.relay.call.CallOwner), the host's cancel, a parked call's round ----

    def cancel(self, session: object, request_id: Any, reason: str | None) -> bool:
        """The host cancelled request `request_id` of `session`; False if nothing of it is in flight."""
        cancelled = self.flight.cancel(session, request_id, reason)
        if cancelled is None or isinstance(cancelled, Call):
            return cancelled is not None
        self.record.line(cancelled, None, _name(cancelled), None, time.perf_counter(), "cancelled")
        return True

    def ended(self, call: Call) -> None:
        if call.quota is not None:
            self.admission.release(call.quota)
            call.quota = None
        self.flight.ended(call)

    def park(self, call: Call) -> str:
        assert call.token is not None
        self.flight.parked[call.token] = call
        self.flight.ended(call)  # out of flight
        return self.seals.seal_parked(call.session.identity.name, call.exposed, call.token, call.window)

    def unpark(self, call: Call) -> None:
        if call.token is not None:
            self.flight.parked.pop(call.token, None)

    def _resume(self, request: HostRequest, name: str, payload: dict[str, Any] | None) -> None:
        """The host is back with the answers of a parked call's round."""
        token = self.seals.parked_token(payload, request.session.identity.name, name)
        call = self.flight.parked.get(token)
        route = self.catalog.namespace.tool_routes.get(name)
        if call is None or call.done or route != Route(call.child.name, call.original):
            raise unknown_round(name)
        responses = request.params.get("inputResponses")
        self.flight.add(request, call)
        call.resume(request, responses if isinstance(responses, dict) else {})

    def log_call(self, call: Call, outcome: str, error: errors.HubError | None, size: int) -> None:
        request = call.request
        if request is None:
            return
        own = call.child.config.log_arguments
        logged = self.settings().log_arguments if own is None else own
        arguments = request.params.get("arguments") if logged and call.method == "tools/call" else None
        self.record.line(
            request, call.child.name, call.exposed, call.original, call.began, outcome, error, size, arguments,
            call.rule, call.span, call.confirmation,
        )  # fmt: skip


def _carries(name: str, child: Child) -> bool:
    """Whether an exposed name or URI carries the child's prefix (every name does, for an unprefixed child)."""
    prefix = child.prefix
    return not prefix or name.startswith((prefix + "_", prefix + "+", f"ui://{prefix}+"))


def _owner(call: Call) -> object:
    """Whose own connection a call takes: its identity's (`sessions: per-identity`), else its session's."""
    return call.session.identity if call.child.per_identity else call.session


def _renamed(params: dict[str, Any], key: str, route: Route | None) -> dict[str, Any]:
    """`params` with the name or URI at `key` as the child knows it."""
    return params if route is None else {**params, key: route.original}


def _name(request: HostRequest) -> str:
    params = request.params
    ref = params.get("ref")
    value = params.get("name") or params.get("uri") or (ref.get("name") if isinstance(ref, dict) else None)
    return value if isinstance(value, str) else ""


def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise errors.BadRequest(f"invalid params: {key!r} must be a string")
    return value


def _object(params: dict[str, Any], key: str) -> None:
    if key in params and params[key] is not None and not isinstance(params[key], dict):
        raise errors.BadRequest(f"invalid params: {key!r} must be an object")

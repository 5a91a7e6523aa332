"""Confirm before destroying: the question the host's user is asked, and the sealed state of a 2026-07-28 round.

A call that needs confirmation (`confirm:` of its child, `hub.relay.exposure`) leaves the hub only after an
explicit yes from the host's user, asked through elicitation in form mode:

- a handshake-era host is sent `elicitation/create` on the call's own stream, and the call waits for the answer;
- a 2026-07-28 host gets an `input_required` answer whose `requestState` is sealed here (`hub.access.sealed`,
  AES-GCM under a key of its own purpose): the identity, the exposed tool, a digest of the arguments, an expiry and
  a nonce. It comes back with the user's answer; the state is accepted only if it opens, its identity, tool,
  arguments and expiry match, and only once.

The key and the used nonces are the hub's shared state (`hub.state`): by default the process's own (a round
is honoured only by the hub that sealed it, until it expires or the hub restarts), or Redis, shared by replicas.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from hub.access import sealed
from hub.config.lock import digest
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import encode
from hub.relay.ports import AskFailed, HostRequest
from hub.state import SharedState

if TYPE_CHECKING:
    from hub.relay.router import Router

STATE_PREFIX = "hub-confirm:"
CONFIRMATIONS = b"hub:confirmations:v1"  # the purpose of the key that seals a confirmation round's state
INPUT_KEY = "confirm"  # the key of the one input request in a confirmation round
ANSWER_FIELD = "confirm"  # the form's boolean field
STATE_TTL = 300.0  # seconds a confirmation round may take before its state expires
# Arguments shown to the user are cut so that the question stays readable.
SHOWN_ARGUMENTS = 2000


def arguments_digest(arguments: Any) -> str:
    """A digest of the host's arguments, independent of key order; any string JSON allows, lone surrogates too."""
    return digest(arguments)


def question(exposed: str, child: str, arguments: Any, shown: str) -> dict[str, Any]:
    """The elicitation/create params (form mode) asking the user to confirm the call. `shown` is the arguments as
    the user sees them (with secrets redacted)."""
    text = shown if len(shown) <= SHOWN_ARGUMENTS else shown[: SHOWN_ARGUMENTS - 3] + "..."
    return {
        "message": (
            f"Confirm: the tool {exposed} of server '{child}' may change or destroy something. "
            f"Run it with these arguments?\n{text}"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                ANSWER_FIELD: {
                    "type": "boolean",
                    "title": f"Run {exposed}",
                    "description": "Yes runs the call once; anything else refuses it.",
                }
            },
            "required": [ANSWER_FIELD],
        },
    }


def said_yes(answer: Any) -> bool:
    """Only an accepted form whose boolean is true is a yes; decline, cancel, or anything else is a no."""
    if not isinstance(answer, dict) or answer.get("action") != "accept":
        return False
    content = answer.get("content")
    return isinstance(content, dict) and content.get(ANSWER_FIELD) is True


class Seals:
    """Seals a confirmation round's `requestState` and opens it once. The key and the used nonces live in the
    hub's shared state (`hub.state`): the process's own, or Redis shared by replicas."""

    def __init__(self, state: SharedState, ttl: float = STATE_TTL) -> None:
        self.state = state
        self._ttl = ttl

    async def seal(self, identity: str, exposed: str, arguments: Any) -> str:
        payload = {
            "i": identity,
            "t": exposed,
            "a": arguments_digest(arguments),
            "e": time.time() + self._ttl,
            "n": secrets.token_urlsafe(12),
        }
        return STATE_PREFIX + sealed.seal(await self.state.seal_key(), payload, CONFIRMATIONS)

    async def open(self, state: str, identity: str, exposed: str, arguments: Any) -> None:
        """Accept a sealed state once, for this identity, tool and arguments, before its expiry.

        Raises:
            errors.NotConfirmed: naming what is wrong (tampered, another call's, expired, or already used).
            errors.Unavailable: the shared state cannot be reached.
        """
        payload = sealed.unseal(await self.state.seal_key(), state.removeprefix(STATE_PREFIX), CONFIRMATIONS)
        if payload is None:
            raise _refused(exposed, "its requestState is not one the hub issued (altered or forged)")
        if (payload.get("i"), payload.get("t"), payload.get("a")) != (identity, exposed, arguments_digest(arguments)):
            raise _refused(exposed, "its requestState was issued for another caller, tool or arguments")
        expiry = payload.get("e")
        if not isinstance(expiry, float | int) or expiry < time.time():
            raise _refused(exposed, "its requestState has expired")
        if not await self.state.use_nonce(str(payload.get("n")), float(expiry)):
            raise _refused(exposed, "its requestState was used already (a confirmation is good for one call)")


def _refused(exposed: str, why: str) -> errors.NotConfirmed:
    return errors.NotConfirmed(f"the confirmation of {exposed!r} is refused: {why}; call the tool again")


# ---- the flow, on the router's one path (hub.relay.router._dispatch calls `begin`) ----------------------------


def begin(
    router: Router, request: HostRequest, route: Any, exposed: str, params: dict[str, Any], rule: str | None
) -> None:
    """A call that needs its user's yes: asked of a handshake-era host now, of a 2026-07-28 host as an input
    round whose sealed state comes back with the answer; forwarded only on an explicit yes. Sealing and
    opening may wait for the shared state (Redis), so the rest runs as a task of its own."""
    modern = revisions.is_modern(request.version)
    if not (modern and isinstance(request.params.get("requestState"), str)) and not request.declared("elicitation"):
        raise errors.NotConfirmed(
            f"the tool {exposed!r} needs its user's confirmation (`confirm:` of server '{route.child}'), "
            "and this host cannot ask for it: it did not declare the elicitation capability. Call it from a host "
            "that supports elicitation, or ask the hub's operator"
        )
    router.stage(request, _confirmation, router, request, route, exposed, params, rule)


async def _confirmation(
    router: Router, request: HostRequest, route: Any, exposed: str, params: dict[str, Any], rule: str | None
) -> None:
    try:
        confirmed = await _ask(router, request, route, exposed, params, rule)
    except errors.HubError as error:
        router.refuse(request, error, route.child, rule)
        return
    if not confirmed:
        return  # a 2026-07-28 host was sent the question; its answer comes as a request of its own
    forwarded = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
    router.start_call(request, route, exposed, forwarded, rule, "accepted")


async def _ask(
    router: Router, request: HostRequest, route: Any, exposed: str, params: dict[str, Any], rule: str | None
) -> bool:
    """True on the user's explicit yes; False when a 2026-07-28 host was answered with the question.

    Raises:
        errors.NotConfirmed: no, or no way to ask, or a round's state that is not accepted.
    """
    arguments = request.params.get("arguments")  # the host's own, which the user is shown and the state binds
    identity = request.session.identity.name
    state = request.params.get("requestState")
    refused = errors.NotConfirmed(f"the user did not confirm the call of {exposed!r}; it was not run")
    if revisions.is_modern(request.version) and isinstance(state, str):
        await router.seals.open(state, identity, exposed, arguments)
        responses = request.params.get("inputResponses")
        if not said_yes(responses.get(INPUT_KEY) if isinstance(responses, dict) else None):
            raise refused
        return True
    shown = json.dumps(router.redact(arguments if arguments is not None else {}), indent=2, default=repr)
    asked = question(exposed, route.child, arguments, shown)
    if revisions.is_modern(request.version):
        answer = {
            "resultType": "input_required",
            "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": asked}},
            "requestState": await router.seals.seal(identity, exposed, arguments),
        }
        body = encode(revisions.stamp(answer, request.method))
        request.respond(body)
        router.log_line(
            request, route.child, exposed, route.original, time.perf_counter(), "input_required", None,
            len(body), None, rule, None, "asked",
        )  # fmt: skip
        return False
    child = router.catalog.children.get(route.child)
    limit = child.config.timeout if child is not None else STATE_TTL
    try:
        answer = await request.ask("elicitation/create", asked, limit)
    except AskFailed as failure:
        why = failure.error.get("message")
        raise errors.NotConfirmed(
            f"the user could not be asked to confirm {exposed!r} ({why}); it was not run"
        ) from None
    if not said_yes(answer):
        raise refused
    return True

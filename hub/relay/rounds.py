"""Input rounds with a 2026-07-28 host: the one sealed `requestState` scheme, and the question a confirmation asks.

Such a host has no stream the hub could send a request on, so what the hub must ask it is an `input_required`
answer, and the host sends the request again with the answers and the round's state. A round is `PARKED` (a
handshake-era child asked something during the call, `hub.relay.call.Call.hold`) or `CONFIRM` (a tool under
`confirm:` needs its user's yes, `hub.relay.admission`). Both are sealed one way (AES-GCM under the shared state's
key, `hub.access.sealed`), with one payload: `k` the kind, `r` the replica that sealed it, `i` the identity, `n` the
exposed tool, `a` a digest of the arguments (confirm), `t` the parked call's token (parked), `e` the expiry (wall
clock), `u` a nonce. A state opens only under the key that sealed it, for its identity and tool, before its expiry,
and once: a confirm round's nonce is spent in the shared state (across replicas); a parked round is collected by
its parked call, which takes one round at a time and is gone when the call ends.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from hub.access import sealed
from hub.config.lock import digest
from hub.protocol import errors
from hub.protocol.jsonrpc import QUOTE_LIMIT
from hub.state import SharedState

ROUND_PREFIX = "hub-round:"
ROUNDS_PURPOSE = b"hub:rounds:v1"  # the purpose of the key that seals every round's state
PARKED = "parked"
CONFIRM = "confirm"
INPUT_KEY = "confirm"  # the key of the one input request in a confirmation round
ANSWER_FIELD = "confirm"  # the form's boolean field
STATE_TTL = 300.0  # seconds a confirmation round may take before its state expires
SHOWN_ARGUMENTS = 2000  # arguments shown to the user are cut so that the question stays readable


class Seals:
    """Seals a round's `requestState` and opens it. The key and the used nonces live in the hub's shared state:
    the process's own, or Redis shared by replicas. A parked round is sealed without waiting (under the key known
    since start, else this replica's own: Redis unreachable at start), as a call answers its host from the
    connection's reader."""

    def __init__(self, state: SharedState, ttl: float = STATE_TTL, replica: str = "") -> None:
        self.state = state
        self._ttl = ttl
        self.replica = replica
        self._own_key = secrets.token_bytes(32)

    def _sealed(self, key: bytes, kind: str, identity: str, exposed: str, ttl: float, a: str = "", t: str = "") -> str:
        payload = {"k": kind, "r": self.replica, "i": identity, "n": exposed, "a": a, "t": t, "e": time.time() + ttl,
                   "u": secrets.token_urlsafe(12)}  # fmt: skip
        return ROUND_PREFIX + sealed.seal(key, payload, ROUNDS_PURPOSE)

    async def seal(self, identity: str, exposed: str, arguments: Any) -> str:
        """A confirmation round's state: this identity, tool and arguments, for STATE_TTL seconds."""
        return self._sealed(await self.state.seal_key(), CONFIRM, identity, exposed, self._ttl, a=digest(arguments))

    async def open(self, state: str, identity: str, exposed: str, arguments: Any) -> None:
        """Accept a confirmation round's state once, for this identity, tool and arguments, before its expiry; else
        errors.NotConfirmed naming what is wrong (errors.Unavailable: the shared state cannot be reached)."""
        key = await self.state.seal_key()
        payload = sealed.unseal(key, state.removeprefix(ROUND_PREFIX), ROUNDS_PURPOSE)
        if payload is None or payload.get("k") != CONFIRM:
            raise _refused(exposed, "its requestState is not one the hub issued (altered or forged)")
        if (payload.get("i"), payload.get("n"), payload.get("a")) != (identity, exposed, digest(arguments)):
            raise _refused(exposed, "its requestState was issued for another caller, tool or arguments")
        expiry = payload.get("e")
        if not isinstance(expiry, float | int) or expiry < time.time():
            raise _refused(exposed, "its requestState has expired")
        if not await self.state.use_nonce(str(payload.get("u")), float(expiry)):
            raise _refused(exposed, "its requestState was used already (a confirmation is good for one call)")

    def seal_parked(self, identity: str, exposed: str, token: str, window: float) -> str:
        """A parked call's round: the replica holding the call, its token, the identity, the tool, an expiry."""
        return self._sealed(self.state.known_key or self._own_key, PARKED, identity, exposed, window, t=token)

    def peek(self, state: str) -> dict[str, Any] | None:
        """The payload of a state this hub sealed (under the key known now), or None: to tell the kinds apart
        before routing. Nothing is accepted by it."""
        return sealed.unseal(self.state.known_key or self._own_key, state.removeprefix(ROUND_PREFIX), ROUNDS_PURPOSE)

    def parked_token(self, payload: dict[str, Any] | None, identity: str, exposed: str) -> str:
        """The token of the parked call a round's payload (`peek`) names, for this identity and tool; else
        errors.BadRequest (the round is unknown, another's, expired, or held by another replica)."""
        if payload is None or payload.get("k") != PARKED or (payload.get("n"), payload.get("i")) != (exposed, identity):
            raise unknown_round(exposed)
        owner = str(payload.get("r"))
        if owner != self.replica:
            raise errors.BadRequest(
                f"hub: this input-required round of {named(exposed)} belongs to replica {owner[:63]!r} and this is "
                f"{self.replica!r}: the load balancer must send a session's requests to one replica "
                "(docs/deploy.md); call the tool again"
            )
        expiry = payload.get("e")
        if not isinstance(expiry, int | float) or expiry < time.time():
            raise unknown_round(exposed)
        return str(payload.get("t"))


def question(exposed: str, child: str, shown: str) -> dict[str, Any]:
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


def named(value: Any) -> str:
    """A name (or id) the host sent, as an error message quotes it: its repr, cut to QUOTE_LIMIT characters."""
    text = repr(value[: QUOTE_LIMIT + 1] if isinstance(value, str) else value)
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 3] + "..."


def unknown_round(exposed: str) -> errors.BadRequest:
    return errors.BadRequest(
        f"hub: this input-required round of {named(exposed)} is unknown or expired; call the tool again"
    )


def _refused(exposed: str, why: str) -> errors.NotConfirmed:
    return errors.NotConfirmed(f"the confirmation of {exposed!r} is refused: {why}; call the tool again")

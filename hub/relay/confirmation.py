"""Confirm before destroying: the question the host's user is asked, and the sealed state of a 2026-07-28 round.

A call that needs confirmation (`confirm:` of its child, `hub.relay.exposure`) leaves the hub only after an
explicit yes from the host's user, asked through elicitation in form mode:

- a handshake-era host is sent `elicitation/create` on the call's own stream, and the call waits for the answer;
- a 2026-07-28 host gets an `input_required` answer whose `requestState` is sealed here: an HMAC-SHA256 over the
  identity, the exposed tool, a digest of the arguments, an expiry and a nonce. It comes back with the user's
  answer; the state is accepted only if its MAC, identity, tool, arguments and expiry match, and only once.

The key and the used nonces are the hub's shared state (`hub.relay.state`): by default the process's own (a round
is honoured only by the hub that sealed it, until it expires or the hub restarts), or Redis, shared by replicas.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

from hub.protocol import errors
from hub.relay.state import SharedState

STATE_PREFIX = "hub-confirm:"
INPUT_KEY = "confirm"  # the key of the one input request in a confirmation round
ANSWER_FIELD = "confirm"  # the form's boolean field
STATE_TTL = 300.0  # seconds a confirmation round may take before its state expires
# Arguments shown to the user are cut so that the question stays readable.
SHOWN_ARGUMENTS = 2000


def arguments_digest(arguments: Any) -> str:
    """A digest of the host's arguments, independent of key order."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


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
    hub's shared state (`hub.relay.state`): the process's own, or Redis shared by replicas."""

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
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{STATE_PREFIX}{body}.{_b64(await self._mac(body))}"

    async def open(self, state: str, identity: str, exposed: str, arguments: Any) -> None:
        """Accept a sealed state once, for this identity, tool and arguments, before its expiry.

        Raises:
            errors.NotConfirmed: naming what is wrong (tampered, another call's, expired, or already used).
            errors.Unavailable: the shared state cannot be reached.
        """
        body, _, mac = state.removeprefix(STATE_PREFIX).partition(".")
        try:
            valid = hmac.compare_digest(_unb64(mac), await self._mac(body))
            payload = json.loads(_unb64(body)) if valid else None
        except (binascii.Error, ValueError):
            valid, payload = False, None
        if not valid or not isinstance(payload, dict):
            raise _refused(exposed, "its requestState is not one the hub issued (altered or forged)")
        if (payload.get("i"), payload.get("t"), payload.get("a")) != (identity, exposed, arguments_digest(arguments)):
            raise _refused(exposed, "its requestState was issued for another caller, tool or arguments")
        expiry = payload.get("e")
        if not isinstance(expiry, float | int) or expiry < time.time():
            raise _refused(exposed, "its requestState has expired")
        if not await self.state.use_nonce(str(payload.get("n")), float(expiry)):
            raise _refused(exposed, "its requestState was used already (a confirmation is good for one call)")

    async def _mac(self, body: str) -> bytes:
        return hmac.new(await self.state.seal_key(), body.encode(), hashlib.sha256).digest()


def _refused(exposed: str, why: str) -> errors.NotConfirmed:
    return errors.NotConfirmed(f"the confirmation of {exposed!r} is refused: {why}; call the tool again")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

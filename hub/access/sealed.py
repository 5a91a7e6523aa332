"""Sealed tokens: a small payload encrypted and authenticated (AES-GCM) under the key the replicas share, so that
only a hub holding the key can read or make one: the `requestState` of the input and confirmation rounds the hub
bridges (hub.relay.rounds), OAuth children's tokens at rest and their sign-in links (hub.upstream.oauth). Each use
has a key of its own derived from the shared one (`purpose`): a value sealed for one use never opens as another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from typing import Any

ROUNDS = b"hub:sealed:v1"  # the default purpose; every other use passes a purpose of its own


def _aead(key: bytes, purpose: bytes) -> Any:
    # Imported here: only an input round or an OAuth child needs it, and it costs the start milliseconds.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(hashlib.sha256(purpose + key).digest())


def seal(key: bytes, payload: dict[str, Any], purpose: bytes = ROUNDS) -> str:
    nonce = secrets.token_bytes(12)
    box = _aead(key, purpose).encrypt(nonce, json.dumps(payload, separators=(",", ":")).encode(), purpose)
    return base64.urlsafe_b64encode(nonce + box).rstrip(b"=").decode()


def unseal(key: bytes, text: str, purpose: bytes = ROUNDS) -> dict[str, Any] | None:
    """The payload, or None for anything this key did not seal for `purpose` (altered, forged, another hub's, sealed
    for another use, not base64)."""
    from cryptography.exceptions import InvalidTag

    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        opened = _aead(key, purpose).decrypt(raw[:12], raw[12:], purpose)
        payload = json.loads(opened)
    except (binascii.Error, ValueError, InvalidTag):
        return None
    return payload if isinstance(payload, dict) else None

"""Sealed tokens: readable and makeable only with the key; any change to the text is refused."""

from __future__ import annotations

from hub.access.sealed import seal, unseal

KEY = b"k" * 32


def test_a_sealed_payload_opens_with_its_key_only() -> None:
    payload = {"r": "round-one", "t": "abc", "i": "ann-the-operator"}
    text = seal(KEY, payload)
    assert unseal(KEY, text) == payload
    # Values long enough that random ciphertext cannot hold them by chance (a two-letter value could).
    assert "ann-the-operator" not in text and "round-one" not in text, "encrypted, not only signed"
    assert unseal(b"x" * 32, text) is None
    flipped = text[:-2] + ("A" if text[-2] != "A" else "B") + text[-1]
    assert unseal(KEY, flipped) is None
    assert unseal(KEY, "not base64 at all!") is None and unseal(KEY, "") is None
    assert seal(KEY, {"a": 1}) != seal(KEY, {"a": 1}), "a fresh nonce each time"

"""The token file: hashes only, expiry and revocation, damage named; pure logic, no processes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from hub.access.identity import Identity
from hub.access.tokens import Rejected, TokenFile, TokenFileError, digest


def test_a_created_token_is_stored_only_as_its_hash_and_checks_back(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    secret = tokens.create("alice", ("oncall",), days=30)
    text = (tmp_path / "tokens.json").read_text()
    assert secret not in text and digest(secret) in text
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert tokens.check(secret) == Identity("alice", frozenset({"oncall"}), "token")
    assert tokens.check(secret + "x") == Rejected("unknown")


def test_an_expired_or_revoked_token_is_refused(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    secret = tokens.create("bob", days=1)
    assert tokens.check(secret, now=tokens.entries()[0].created + 2 * 86400) == Rejected("expired")
    tokens.revoke("bob")
    assert tokens.check(secret) == Rejected("unknown")


def test_another_process_revoking_a_token_is_seen_at_the_next_check(tmp_path: Path) -> None:
    running = TokenFile(tmp_path / "tokens.json")
    secret = running.create("carol")
    assert isinstance(running.check(secret), Identity)
    TokenFile(tmp_path / "tokens.json").revoke("carol")  # `hub token revoke` in another process
    assert running.check(secret) == Rejected("unknown")


def test_a_damaged_token_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"name": "x", "sha256": "nothex"}]}))
    with pytest.raises(TokenFileError, match=r"tokens.json: tokens\[0\] needs a 'name' and a 'sha256'"):
        TokenFile(path).check("hub_anything")


def test_names_and_duplicates_are_checked(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    tokens.create("alice")
    with pytest.raises(TokenFileError, match="exists already"):
        tokens.create("alice")
    with pytest.raises(TokenFileError, match="invalid token name"):
        tokens.create("al ice")

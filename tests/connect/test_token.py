"""Where `hub connect` takes its token from: the environment or the keyring, never in a repr or a message."""

from __future__ import annotations

import sys

import pytest

from hub.connect.token import Token, TokenError, from_env, from_keyring


def test_the_token_comes_from_the_named_variable_without_surrounding_whitespace() -> None:
    token = from_env("TEAM_HUB", {"TEAM_HUB": " hub_abc123\n"}, required=True)
    assert token.value == "hub_abc123"
    assert token.header() == {"authorization": "Bearer hub_abc123"}
    assert "hub_abc123" not in repr(token)
    assert token.refused() == "the token from $TEAM_HUB was refused"


def test_the_default_variable_unset_means_no_token_and_the_refusal_says_which_to_set() -> None:
    token = from_env("HUB_TOKEN", {}, required=False)
    assert token.value is None and token.header() == {}
    assert token.refused() == "no token was sent ($HUB_TOKEN is not set)"


def test_a_named_variable_that_is_unset_or_unusable_is_an_error_without_the_value() -> None:
    with pytest.raises(TokenError, match=r"\$TEAM_HUB is not set"):
        from_env("TEAM_HUB", {}, required=True)
    with pytest.raises(TokenError, match="is empty"):
        from_env("TEAM_HUB", {"TEAM_HUB": "  "}, required=True)
    with pytest.raises(TokenError, match="one word") as bad:
        from_env("TEAM_HUB", {"TEAM_HUB": "two secret-words"}, required=True)
    assert "secret-words" not in str(bad.value)


def test_the_token_comes_from_the_keyring(fake_keyring: dict[tuple[str, str], str]) -> None:
    fake_keyring[("team-hub", "token")] = "hub_from_keyring"
    token = from_keyring("team-hub", "token")
    assert token == Token("hub_from_keyring", "the keyring (service 'team-hub', user 'token')")
    with pytest.raises(TokenError, match="keyring set other token"):
        from_keyring("other", "token")
    with pytest.raises(TokenError, match="cannot be read: KeyringError: no backend"):
        from_keyring("broken", "token")


def test_without_the_keyring_package_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring raises ImportError
    with pytest.raises(TokenError, match="pip install keyring"):
        from_keyring("team-hub", "token")

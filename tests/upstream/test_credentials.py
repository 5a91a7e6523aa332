"""A child's configuration as an identity runs it: placeholders, secrets from a directory, a file, the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.access.identity import Identity
from hub.access.secrets import Secrets
from hub.config.schema import ServerConfig
from hub.upstream.credentials import MissingCredential, personal

ALICE = Identity("alice", frozenset({"oncall", "dba"}), "token")


def test_identity_and_secrets_are_expanded_in_env_headers_and_args(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "pg-alice").write_text("s3cr3t-a\n")
    config = ServerConfig(
        command="server",
        args=("--user", "${identity.name}"),
        env={"PGPASSWORD": "${secret:pg-${identity.name}}", "GROUPS": "${identity.groups}", "PLAIN": "x"},
    )
    mine = personal(config, ALICE, Secrets(tmp_path / "secrets"))
    assert mine.args == ("--user", "alice")
    assert mine.env == {"PGPASSWORD": "s3cr3t-a", "GROUPS": "dba,oncall", "PLAIN": "x"}
    assert config.env["PGPASSWORD"] == "${secret:pg-${identity.name}}", "the configuration itself is unchanged"


def test_a_file_and_the_environment_are_looked_in_after_the_directory(tmp_path: Path) -> None:
    (tmp_path / "secrets.yaml").write_text("api-alice: from-file\n")
    secrets = Secrets(tmp_path / "none", tmp_path / "secrets.yaml", {"api-bob": "from-env"})
    url = ServerConfig(
        url="https://api.example.com/mcp", headers={"Authorization": "Bearer ${secret:api-${identity.name}}"}
    )
    assert personal(url, ALICE, secrets).headers["Authorization"] == "Bearer from-file"
    bob = Identity("bob")
    assert personal(url, bob, secrets).headers["Authorization"] == "Bearer from-env"


def test_an_identity_without_the_secret_gets_an_error_naming_it_and_no_value(tmp_path: Path) -> None:
    (tmp_path / "pg-alice").write_text("s3cr3t-a")
    config = ServerConfig(command="server", env={"PGPASSWORD": "${secret:pg-${identity.name}}"})
    with pytest.raises(MissingCredential) as raised:
        personal(config, Identity("carol"), Secrets(tmp_path, environ={}))
    assert "identity 'carol' has no secret 'pg-carol'" in str(raised.value)
    assert "s3cr3t" not in str(raised.value)


def test_a_configuration_without_placeholders_is_returned_as_it_is() -> None:
    config = ServerConfig(command="server", env={"A": "b"})
    assert personal(config, ALICE, Secrets()) is config

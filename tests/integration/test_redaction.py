"""Secrets never reach a log line: a child that sends its credentials back in its stderr, a result and an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import connect_hub, hub_params, python_child, write_config

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a3f2e1d0c"


async def test_a_childs_leaked_secret_is_in_no_log_line(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "leaky-header").write_text("hdr-0a1b2c3d4e5f6a7b\n")
    leaky = {
        **python_child("tests.children.leaky"),
        "env": {"LEAKY_TOKEN": TOKEN, "LEAKY_HEADER": "${secret:leaky-header}"},
        "log_arguments": True,
    }
    config = write_config(tmp_path, {"leaky": leaky})
    config.write_text(config.read_text() + "secrets: {dir: secrets}\n")
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--log-level", "debug")) as client:
        result = await client.call_tool("leaky_leak", {"echo": f"my token is {TOKEN}", "auth": "Bearer abcdefghij123"})
        assert TOKEN in result.content[0].text  # type: ignore[union-attr]  # results reach the host as sent
        with pytest.raises(MCPError, match="denied for"):
            await client.call_tool("leaky_leak_error", {})
    text = log.read_text()
    assert "leaky: starting with token [REDACTED] and header [REDACTED]" in text, "the stderr line, redacted"
    assert "denied for [REDACTED]" in text and "my token is [REDACTED]" in text
    for secret in (TOKEN, "hdr-0a1b2c3d4e5f6a7b", "abcdefghij123"):
        assert secret not in text


async def test_listed_secrets_are_redacted_and_redact_output_cleans_results(tmp_path: Path) -> None:
    """A value under the child's `secrets:` is in no log line though its variable's name says nothing; with
    `redact_output: true` the child's result reaches the host without its credentials."""
    plain_named = "plain-value-7c6b5a4d3e2f"
    leaky = {
        **python_child("tests.children.leaky"),
        "env": {"LEAKY_TOKEN": TOKEN, "LEAKY_HEADER": plain_named},
        "secrets": [plain_named],
        "redact_output": True,
    }
    config = write_config(tmp_path, {"leaky": leaky})
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log, "--log-level", "debug")) as client:
        result = await client.call_tool("leaky_leak", {})
        assert result.content[0].text == "your token is [REDACTED]"  # type: ignore[union-attr]
    text = log.read_text()
    assert "header [REDACTED]" in text
    assert plain_named not in text and TOKEN not in text

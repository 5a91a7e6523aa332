"""`sandbox:` as people type it: the words, the grants with `~` and `${VAR}`, the hub's default, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import ConfigError, HubConfig, parse_config
from hub.platform.sandbox import Grants

FILE = Path("/etc/hub/servers.yaml")


def parse(text: str, environ: dict[str, str] | None = None) -> HubConfig:
    return parse_config(text, FILE, environ or {})


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    return str(caught.value)


def test_the_words_and_the_grants_become_the_platforms_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/ann")
    config = parse(
        "servers:\n"
        "  a: {command: x, sandbox: strict}\n"
        "  b: {command: x, sandbox: none}\n"
        "  c: {command: x, sandbox: {network: true, write: ['~/notes', '${DATA}/out'], read: [/srv/docs/]}}\n"
        "  d: {command: x, sandbox: {container: 'node:22', runtime: podman}}\n",
        {"DATA": "/data"},
    )
    servers = config.servers
    assert servers["a"].grants() == Grants()
    assert servers["b"].grants() is None
    assert servers["c"].grants() == Grants(True, ("/home/ann/notes", "/data/out"), ("/srv/docs",))
    assert servers["d"].grants() == Grants(container="node:22", runtime="podman")


def test_a_stdio_child_without_its_own_takes_the_hubs_default_and_none_is_the_default() -> None:
    config = parse("hub: {sandbox: strict}\nservers:\n  a: {command: x}\n  b: {command: x, sandbox: none}\n")
    assert config.servers["a"].grants() == Grants()
    assert config.servers["b"].grants() is None
    assert parse("servers:\n  a: {command: x}\n").servers["a"].grants() is None
    url = parse("hub: {sandbox: strict}\nservers:\n  u: {url: 'http://x/mcp'}\n").servers["u"]
    assert url.sandbox is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("servers:\n  a: {command: x, sandbox: tight}\n", "servers.a.sandbox"),
        ("servers:\n  a: {command: x, sandbox: {write: [notes]}}\n", "sandbox path 'notes' is not absolute"),
        ("servers:\n  a: {command: x, sandbox: {read: [/]}}\n", "use sandbox: none instead"),
        ("servers:\n  a: {command: x, sandbox: {runtime: docker}}\n", "sandbox runtime needs container: IMAGE"),
        ("servers:\n  a: {command: x, sandbox: {netwrok: true}}\n", "netwrok"),
        ("servers:\n  u: {url: 'http://x/mcp', sandbox: strict}\n", "sandbox only apply to stdio children"),
    ],
)
def test_a_wrong_sandbox_is_refused_with_what_to_write(text: str, message: str) -> None:
    assert message in error_of(text)


def test_a_change_of_sandbox_restarts_the_child() -> None:
    before = parse("servers:\n  a: {command: x}\n").servers["a"].launch_settings()
    after = parse("hub: {sandbox: strict}\nservers:\n  a: {command: x}\n").servers["a"].launch_settings()
    assert before != after

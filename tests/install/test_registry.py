"""server.json documents (real published ones, tests/fixtures/registry/) as servers.yaml children."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub.install.registry import RegistryError, entry_name, server_entry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "registry"


def load(name: str) -> dict[str, object]:
    document: dict[str, object] = json.loads((FIXTURES / name).read_text())
    return document


def test_names_lose_mcp_and_server_words() -> None:
    assert entry_name("io.github.modelcontextprotocol/server-time") == "time"
    assert entry_name("io.github.brave/brave-search-mcp-server") == "brave-search"
    assert entry_name("io.github.github/github-mcp-server") == "github"
    assert entry_name("com.example/mcp-server") == "mcp-server"


def test_each_kind_of_package_and_a_remote() -> None:
    time = server_entry(load("server-time.json"), "f")
    assert time.child == {"command": "uvx", "args": ["mcp-server-time==0.6.2"]} and not time.placeholders
    everything = server_entry(load("server-everything.json"), "f")  # the stdio package, not the HTTP one
    assert everything.child == {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-everything@2.0.0", "stdio"],
    }
    github = server_entry(load("github-mcp-server.json"), "f", use="oci")
    assert github.child["args"] == [
        "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server:0.20.1",
    ]  # fmt: skip
    assert github.child["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"}
    remote = server_entry(load("remote-weather.json"), "f")
    assert remote.child == {
        "url": "https://api.example.com/mcp",
        "transport": "streamable-http",
        "headers": {"Authorization": "${REMOTE_WEATHER_AUTHORIZATION}"},
    }
    assert "Bearer <token>" in remote.placeholders["REMOTE_WEATHER_AUTHORIZATION"]


def test_secrets_required_values_and_optional_ones() -> None:
    brave = server_entry(load("brave-search-mcp-server.json"), "f")
    assert brave.child["env"] == {"BRAVE_API_KEY": "${BRAVE_API_KEY}"}
    assert brave.placeholders == {"BRAVE_API_KEY": "Your API key for the service"}
    context7 = server_entry(load("context7.json"), "f")  # an optional secret: left out, and said so
    assert "env" not in context7.child and not context7.placeholders
    assert any("CONTEXT7_API_KEY" in note for note in context7.notes)
    document = {
        "name": "io.example/x",
        "version": "1",
        "packages": [{
            "registryType": "pypi", "identifier": "x-mcp", "version": "1", "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "named", "name": "--root", "valueHint": "root", "isRequired": True},
                {"type": "named", "name": "--mode", "default": "ro"},
                {"type": "positional", "value": "cost=$5"},
                {"type": "named", "name": "--verbose", "value": "false", "format": "boolean"},
            ],
            "environmentVariables": [{"name": "LOG", "default": "info"}],
        }],
    }  # fmt: skip
    x = server_entry(document, "f")
    assert x.child == {
        "command": "uvx",
        "args": ["x-mcp==1", "--root", "${X_ROOT}", "--mode", "ro", "cost=$$5"],
        "env": {"LOG": "info"},
    }


def test_what_cannot_be_added_is_refused_by_name() -> None:
    with pytest.raises(RegistryError, match="offers: pypi"):
        server_entry(load("server-time.json"), "f", use="remote")
    with pytest.raises(RegistryError, match="deleted"):
        server_entry(load("server-time.json"), "f", status="deleted")
    nuget = {"name": "io.example/n", "packages": [{"registryType": "nuget", "identifier": "N"}]}
    with pytest.raises(RegistryError, match="it offers: nuget"):
        server_entry(nuget, "f")
    assert "deprecated" in server_entry(load("server-time.json"), "f", status="deprecated").notes[0]

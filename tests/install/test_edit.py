"""hub.install.edit: a host's servers mapping that is not a mapping is refused by name, never a crash."""

from __future__ import annotations

import pytest

from hub.install.edit import EditError, JsonServers, TomlServers


@pytest.mark.parametrize("text", ["mcp_servers = 1\n", 'mcp_servers = "x"\n', "mcp_servers = [1]\n"])
def test_a_toml_servers_key_that_is_not_a_table_is_refused_and_left_as_it_is(text: str) -> None:
    doc = TomlServers(text, ("mcp_servers",))
    for change in (doc.entries, lambda: doc.set_entry("hub", {"command": "hub"}), lambda: doc.remove_entry("hub")):
        with pytest.raises(EditError, match="'mcp_servers' is not a table; left as it is"):
            change()
    assert doc.text == text


def test_a_toml_servers_table_inline_or_not_is_edited() -> None:
    inline = TomlServers('mcp_servers = { a = { command = "a" } }\n', ("mcp_servers",))
    assert inline.entries() == {"a": {"command": "a"}}
    fresh = TomlServers("", ("mcp_servers",))
    fresh.set_entry("hub", {"command": "hub"})
    assert fresh.entries() == {"hub": {"command": "hub"}}
    assert "[mcp_servers.hub]" in fresh.text


def test_a_json_servers_key_that_is_not_an_object_cannot_be_changed() -> None:
    doc = JsonServers('{"mcpServers": 1}', ("mcpServers",))
    assert doc.entries() == {}
    with pytest.raises(EditError, match="mcpServers is not an object"):
        doc.set_entry("hub", {"command": "hub"})

"""hub.install.jsonc: JSON with comments parsed with spans, and edits that touch only one member's text."""

from __future__ import annotations

import json

import pytest

from hub.install.jsonc import JsoncError, loads, remove_member, set_value

ENTRY = {"command": "/opt/hub", "args": ["serve"]}


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "mcpServers": {\n    "a": {"command": "x"}\n  }\n}\n',
        '{\n  "mcpServers": {\n    "a": {"command": "x"}, // the a server\n  }\n}\n',
        '{\n  "mcpServers": {\n    "a": {"command": "x"} /* a */\n  },\n  "z": 1\n}',
        '{"mcpServers": {"a": {"command": "x"}}}',
        '{"mcpServers": {"a": {"command": "x"},}}',
        '{\r\n\t"mcpServers": {\r\n\t\t"a": {"command": "x"}\r\n\t}\r\n}\r\n',
        '{\n  "mcpServers": {\n    "a": 1}\n}',
        '\ufeff{\n  "mcpServers": {\n    "a": 1\n  }\n}\n',
    ],
    ids=[
        "plain",
        "trailing-comma-comment",
        "block-comment",
        "one-line",
        "one-line-trailing",
        "crlf-tabs",
        "brace",
        "bom",
    ],
)
def test_adding_then_removing_a_member_gives_back_the_same_bytes(text: str) -> None:
    added = set_value(text, ["mcpServers", "hub"], ENTRY)
    assert loads(added)["mcpServers"] == {**loads(text)["mcpServers"], "hub": ENTRY}
    assert remove_member(added, ["mcpServers", "hub"]) == text


def test_a_new_member_is_indented_like_its_siblings_with_the_files_line_ends() -> None:
    text = '{\r\n\t"mcpServers": {\r\n\t\t"a": 1\r\n\t}\r\n}\r\n'
    added = set_value(text, ["mcpServers", "hub"], ENTRY)
    assert added == (
        '{\r\n\t"mcpServers": {\r\n\t\t"a": 1,\r\n\t\t"hub": {\r\n\t\t\t"command": "/opt/hub",\r\n'
        '\t\t\t"args": ["serve"]\r\n\t\t}\r\n\t}\r\n}\r\n'
    )


def test_missing_objects_are_created_and_an_emptied_one_is_written_empty() -> None:
    text = '{\n  "theme": "dark" // mine\n}\n'
    added = set_value(text, ["context_servers", "hub"], ENTRY)
    assert loads(added) == {"theme": "dark", "context_servers": {"hub": ENTRY}}
    assert "// mine" in added
    assert (
        remove_member(added, ["context_servers", "hub"])
        == '{\n  "theme": "dark", // mine\n  "context_servers": {}\n}\n'
    )
    assert set_value("// only a comment\n", ["a"], 1) == '// only a comment\n{\n  "a": 1\n}\n'
    assert set_value("", ["a", "b"], True) == '{\n  "a": {\n    "b": true\n  }\n}\n'


def test_a_value_is_replaced_in_place_and_the_rest_kept() -> None:
    text = '{\n  "s": {\n    "hub": {\n      "command": "/old", // moved\n      "env": {"A": "1"}\n    }\n  }\n}'
    changed = set_value(text, ["s", "hub", "command"], "/new")
    assert changed == text.replace('"/old"', '"/new"')


def test_removing_a_member_in_the_middle_or_first() -> None:
    text = '{\n  "s": {\n    "a": 1,\n    "hub": 2, // gone with it\n    "b": 3\n  }\n}'
    assert remove_member(text, ["s", "hub"]) == '{\n  "s": {\n    "a": 1,\n    "b": 3\n  }\n}'
    assert remove_member(text, ["s", "a"]) == '{\n  "s": {\n    "hub": 2, // gone with it\n    "b": 3\n  }\n}'
    assert remove_member('{"s": {"hub": 1, "b": 2}}', ["s", "hub"]) == '{"s": {"b": 2}}'
    assert remove_member(text, ["s", "nope"]) == text
    assert remove_member(text, ["nope", "x"]) == text


def test_strings_with_comment_markers_and_escapes_are_values() -> None:
    text = '{"url": "https://x//y/*z*/", "q": "a\\"b", "n": -1.5e3, "l": [true, false, null]}'
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1', "line 1, column 8"),
        ('{"a" 1}', "expected ':'"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ("{'a': 1}", "expected a string"),
        ('{"a": 1} x', "unexpected text"),
        ('{"a": /* open', "not closed"),
    ],
)
def test_what_is_not_json_with_comments_is_an_error_naming_the_place(text: str, where: str) -> None:
    with pytest.raises(JsoncError, match=where):
        loads(text)


def test_a_path_through_something_not_an_object_is_an_error() -> None:
    with pytest.raises(JsoncError, match="mcpServers is not an object"):
        set_value('{"mcpServers": []}', ["mcpServers", "hub"], 1)

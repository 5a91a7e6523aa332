"""JSON with comments (Zed's and VS Code's settings; plain JSON too), read and edited in place.

An edit never re-serialises the document: the text is parsed into values with their spans, and an edit replaces,
inserts or deletes the text of one member only, so the person's comments, order and layout stay byte for byte.
Removing a member undoes inserting it exactly (its line, and the comma added for it); an object left empty is `{}`.

Accepted: JSON, `//` and `/* */` comments, trailing commas, a byte-order mark; not the rest of JSON5 (single quotes,
bare keys), which no host's settings file uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_SCALAR = re.compile(r"true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
DEFAULT_INDENT = "  "


class JsoncError(ValueError):
    """The text is not JSON with comments; the message names the line and column."""


@dataclass
class Member:
    """`"key": value` in an object: where the key starts, the value, and the comma after it (if any)."""

    key: str
    key_start: int
    value: Node
    comma: int | None = None


@dataclass
class Node:
    """A value with its span `[start, end)` in the text; an object's members in order (other values have none)."""

    start: int
    end: int
    data: Any
    members: list[Member] = field(default_factory=list)

    def member(self, key: str) -> Member | None:
        """The member named `key` (the last one, as JSON.parse keeps the last of duplicate keys)."""
        return next((m for m in reversed(self.members) if m.key == key), None)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - _line_start(self.text, self.pos) + 1
        return JsoncError(f"line {line}, column {column}: {what}")

    def skip(self) -> None:
        """Past blanks and comments."""
        self.pos = _skip(self.text, self.pos, len(self.text), " \t\r\n\ufeff")
        if self.at("/*"):
            raise self.fail("a /* comment is not closed")

    def at(self, char: str) -> bool:
        return self.text.startswith(char, self.pos)

    def value(self) -> Node:
        self.skip()
        if self.at("{"):
            return self.object()
        if self.at("["):
            return self.array()
        if self.at('"'):
            return self.scalar(_STRING, "expected a string in double quotes")
        return self.scalar(_SCALAR, "expected a value")

    def scalar(self, pattern: re.Pattern[str], expected: str) -> Node:
        """The string, number or literal `pattern` matches here, decoded as JSON."""
        match = pattern.match(self.text, self.pos)
        if match is None:
            raise self.fail(expected)
        self.pos = match.end()
        return Node(match.start(), self.pos, json.loads(match.group()))

    def object(self) -> Node:
        node = Node(self.pos, self.pos, {})
        self.pos += 1
        self.skip()
        while not self.at("}"):
            if node.members and node.members[-1].comma is None:
                raise self.fail("expected ',' or '}'")
            node.members.append(self.member())
            node.data[node.members[-1].key] = node.members[-1].value.data
        self.pos += 1
        node.end = self.pos
        return node

    def member(self) -> Member:
        key = self.scalar(_STRING, "expected a string in double quotes")
        self.skip()
        if not self.at(":"):
            raise self.fail("expected ':'")
        self.pos += 1
        member = Member(key.data, key.start, self.value())
        self.skip()
        if self.at(","):
            member.comma = self.pos
            self.pos += 1
            self.skip()
        elif self.pos >= len(self.text):
            raise self.fail("an object is not closed")
        return member

    def array(self) -> Node:
        node = Node(self.pos, self.pos, [])
        self.pos += 1
        self.skip()
        while not self.at("]"):
            node.data.append(self.value().data)
            self.skip()
            if self.at(","):
                self.pos += 1
                self.skip()
            elif not self.at("]"):
                raise self.fail("expected ',' or ']'")
        self.pos += 1
        node.end = self.pos
        return node


def _skip(text: str, pos: int, limit: int, blanks: str) -> int:
    """From `pos`, past `blanks` and comments: the first other character (a /* comment that is not closed is one),
    or `limit`."""
    while pos < limit:
        if text[pos] in blanks:
            pos += 1
        elif text.startswith("//", pos):
            end = text.find("\n", pos, limit)
            pos = limit if end < 0 else end
        elif text.startswith("/*", pos) and (end := text.find("*/", pos + 2)) >= 0:
            pos = end + 2
        else:
            break
    return pos


def parse(text: str) -> Node | None:
    """The document's top-level value with its spans; None for a text of only blanks and comments.

    Raises:
        JsoncError: the text is not JSON with comments.
    """
    parser = _Parser(text)
    parser.skip()
    if parser.pos >= len(text):
        return None
    root = parser.value()
    parser.skip()
    if parser.pos < len(text):
        raise parser.fail("unexpected text after the document")
    return root


def loads(text: str) -> Any:
    """The document's data (None for an empty document), as `json.loads` would give it without the comments.

    Raises:
        JsoncError: the text is not JSON with comments.
    """
    root = parse(text)
    return None if root is None else root.data


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _own_line_indent(text: str, pos: int) -> str | None:
    """The blanks before `pos` if nothing else precedes it on its line; else None."""
    before = text[_line_start(text, pos) : pos]
    return before if before.strip() == "" else None


def _indent_unit(root: Node, text: str) -> str:
    """The file's indentation step: the indentation of the top-level object's first member, if on its own line."""
    first = _own_line_indent(text, root.members[0].key_start) if root.members else None
    return first or DEFAULT_INDENT


def _line_indent(text: str, pos: int) -> str:
    line = text[_line_start(text, pos) : pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _same_line_end(text: str, pos: int, limit: int) -> int:
    """From `pos`, past blanks and the comments that start on this line: where the line's content ends (before its
    line break), or the first other character, or `limit`."""
    pos = _skip(text, pos, limit, " \t")
    if pos < limit and text[pos] == "\n" and text[pos - 1] == "\r":
        pos -= 1
    return pos


def _render(value: Any, indent: str | None, unit: str, newline: str) -> str:
    """`value` as JSON: on one line when `indent` is None; else objects one member a line, indented from `indent`,
    and lists on one line (`"args": ["serve", "--config", "..."]`), as hosts' files have them."""
    if indent is None or not isinstance(value, dict) or not value:
        return json.dumps(value, ensure_ascii=False)
    members = [
        f"{newline}{indent}{unit}{json.dumps(k, ensure_ascii=False)}: {_render(v, indent + unit, unit, newline)},"
        for k, v in value.items()
    ]
    return "{" + "".join(members)[:-1] + f"{newline}{indent}}}"


_Edit = tuple[int, int, str]  # replace text[start:end] by the string


def _apply(text: str, edits: list[_Edit]) -> str:
    """The edits applied from the end backwards; of two at one place, the first listed ends up first."""
    for _, (start, end, new) in sorted(enumerate(edits), key=lambda pair: (pair[1][0], pair[0]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def set_value(text: str, path: Sequence[str], value: Any) -> str:
    """`text` with the member at `path` (object keys from the top) set to `value`, creating the objects on the way.

    Raises:
        JsoncError: the text is not JSON with comments, or something on the path is not an object.
    """
    root = parse(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    if root is None:
        lead = text if not text or text.endswith("\n") else text + newline
        return lead + _render(_nested(path, value), "", DEFAULT_INDENT, newline) + newline
    unit = _indent_unit(root, text)
    node = root
    for depth, key in enumerate(path):
        if not isinstance(node.data, dict):
            raise JsoncError(f"{'.'.join(path[:depth]) or 'the top level'} is not an object")
        member = node.member(key)
        if member is None:
            return _apply(text, _insert(text, node, key, _nested(path[depth + 1 :], value), unit, newline))
        if depth == len(path) - 1:
            rendered = _render(value, _own_line_indent(text, member.key_start), unit, newline)
            return _apply(text, [(member.value.start, member.value.end, rendered)])
        node = member.value
    raise JsoncError("an empty path names no member")


def _insert(text: str, node: Node, key: str, value: Any, unit: str, newline: str) -> list[_Edit]:
    """The edits that add `"key": value` as the last member of the object `node`."""
    closing = node.end - 1
    if not node.members:
        outer = _line_indent(text, node.start)
        inner = outer + unit
        member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, inner, unit, newline)}"
        if _own_line_indent(text, closing) is not None:  # `{` ... newline, `}` alone on its line
            return [(_line_start(text, closing), _line_start(text, closing), f"{inner}{member}{newline}")]
        return [(node.start + 1, closing, f"{newline}{inner}{member}{newline}{outer}")]
    last = node.members[-1]
    indent = _own_line_indent(text, last.key_start)
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent, unit, newline)}"
    if indent is None:  # an object written on one line: stay on it
        if last.comma is None:
            return [(last.value.end, last.value.end, f", {member}")]
        return [(last.comma + 1, last.comma + 1, f" {member},")]
    after = last.value.end if last.comma is None else last.comma + 1
    at = _same_line_end(text, after, closing)
    if last.comma is None:
        return [(last.value.end, last.value.end, ","), (at, at, f"{newline}{indent}{member}")]
    return [(at, at, f"{newline}{indent}{member},")]


def remove_member(text: str, path: Sequence[str]) -> str:
    """`text` without the member at `path`, and without the comma that only it needed; unchanged if it is absent.

    Raises:
        JsoncError: the text is not JSON with comments.
    """
    node = _find(parse(text), path[:-1])
    if node is None or node.member(path[-1]) is None:
        return text
    index = max(i for i, m in enumerate(node.members) if m.key == path[-1])
    result = _apply(text, _removal(text, node, index))
    if len(node.members) == 1:  # the object is empty now: `{}` (what an insertion into `{}` started from)
        emptied = _find(parse(result), path[:-1])
        if emptied is not None and result[emptied.start + 1 : emptied.end - 1].strip() == "":
            result = result[: emptied.start + 1] + result[emptied.end - 1 :]
    return result


def _find(node: Node | None, path: Sequence[str]) -> Node | None:
    for key in path:
        member = node.member(key) if node is not None else None
        node = member.value if member is not None else None
    return node


def _removal(text: str, node: Node, index: int) -> list[_Edit]:
    """The edits that take the member at `index` out of the object `node`: its text, and one comma."""
    member = node.members[index]
    comma_before = node.members[index - 1].comma if index > 0 else None  # set: only the last member has none
    if _own_line_indent(text, member.key_start) is not None:
        start = _line_start(text, member.key_start) - 1  # the line break before it
        start -= 1 if start > 0 and text[start - 1] == "\r" else 0
        after = member.value.end if member.comma is None else member.comma + 1
        edits = [(max(start, node.start + 1), _same_line_end(text, after, node.end - 1), "")]
        if member.comma is None and comma_before is not None:  # the last member: the comma before it goes too
            edits.append((comma_before, comma_before + 1, ""))
        return edits
    if member.comma is None:
        return [(member.key_start if comma_before is None else comma_before, member.value.end, "")]
    end = member.comma + 1
    while comma_before is None and end < node.end - 1 and text[end] in " \t":
        end += 1
    return [(node.start + 1 if comma_before is None else comma_before + 1, end, "")]

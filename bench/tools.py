"""Tool definitions shared by both synthetic children (plain dicts: `child_raw` must not import the SDK).

Every child lists `echo`, `payload`, `sleep` and K "realistic" tools whose input schemas look like those of
real servers (nested objects, enums, arrays, descriptions, required fields), so that listing sizes and
tokens are representative.
"""

from __future__ import annotations

from typing import Any

_TEMPLATES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    (
        "search_issues",
        "Search issues and pull requests in a repository. Returns at most `limit` matches, newest first, with "
        "title, state, labels and the first lines of the body. Use precise terms: the search is full-text.",
        {
            "repository": {"type": "string", "description": "owner/name of the repository, e.g. octo/hello"},
            "query": {"type": "string", "description": "full-text query; supports label:x and author:y"},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        },
        ["repository", "query"],
    ),
    (
        "read_file",
        "Read a text file from the workspace. Large files are truncated to `max_bytes`; binary files are refused.",
        {
            "path": {"type": "string", "description": "path relative to the workspace root"},
            "max_bytes": {"type": "integer", "minimum": 1, "default": 65536},
            "encoding": {"type": "string", "enum": ["utf-8", "latin-1"], "default": "utf-8"},
        },
        ["path"],
    ),
    (
        "run_query",
        "Run a read-only SQL query against the analytics database and return rows as JSON objects. Statements "
        "other than SELECT are rejected. A query that takes longer than `timeout_s` is cancelled.",
        {
            "sql": {"type": "string", "description": "one SELECT statement"},
            "parameters": {
                "type": "array",
                "description": "positional parameters bound to ? placeholders",
                "items": {"type": ["string", "number", "boolean", "null"]},
            },
            "timeout_s": {"type": "number", "minimum": 0.1, "maximum": 300, "default": 30},
        },
        ["sql"],
    ),
    (
        "create_event",
        "Create a calendar event and invite attendees. Times are ISO 8601 with an offset; the organizer is the "
        "authenticated user.",
        {
            "title": {"type": "string", "maxLength": 200},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "attendees": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "email": {"type": "string", "format": "email"},
                        "optional": {"type": "boolean", "default": False},
                    },
                    "required": ["email"],
                },
            },
            "location": {"type": "string"},
            "reminders": {"type": "array", "items": {"type": "integer", "description": "minutes before start"}},
        },
        ["title", "start", "end"],
    ),
    (
        "fetch_url",
        "Fetch a URL and return its content as markdown. Follows up to 5 redirects; refuses non-HTTP schemes.",
        {
            "url": {"type": "string", "format": "uri"},
            "max_length": {"type": "integer", "default": 5000, "description": "maximum characters returned"},
            "start_index": {"type": "integer", "default": 0, "description": "start at this character (paging)"},
            "raw": {"type": "boolean", "default": False, "description": "return the raw HTML instead of markdown"},
        },
        ["url"],
    ),
    (
        "send_message",
        "Post a message to a chat channel or a user. Supports markdown and threads; mentions are resolved by name.",
        {
            "channel": {"type": "string", "description": "channel name (#general) or user (@ada)"},
            "text": {"type": "string", "maxLength": 4000},
            "thread_id": {"type": "string", "description": "reply in this thread"},
            "attachments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "url": {"type": "string", "format": "uri"}},
                },
            },
        },
        ["channel", "text"],
    ),
    (
        "list_directory",
        "List the entries of a directory with their type and size, optionally recursively up to `depth` levels.",
        {
            "path": {"type": "string"},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "include_hidden": {"type": "boolean", "default": False},
            "pattern": {"type": "string", "description": "glob filter applied to names, e.g. *.py"},
        },
        ["path"],
    ),
    (
        "update_record",
        "Update fields of a CRM record. Only the given fields change; unknown fields are an error.",
        {
            "object": {"type": "string", "enum": ["contact", "company", "deal", "ticket"]},
            "id": {"type": "string"},
            "fields": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}},
            "if_version": {"type": "integer", "description": "optimistic concurrency: fail if the version differs"},
        },
        ["object", "id", "fields"],
    ),
]


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


CORE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Return the given text unchanged.",
        "inputSchema": _obj({"text": {"type": "string"}}, ["text"]),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "payload",
        "description": "Return a text block of exactly `bytes` bytes.",
        "inputSchema": _obj({"bytes": {"type": "integer", "minimum": 0}}, ["bytes"]),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "sleep",
        "description": "Wait `ms` milliseconds, then answer.",
        "inputSchema": _obj({"ms": {"type": "number", "minimum": 0}}, ["ms"]),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]


def tool_definitions(k: int) -> list[dict[str, Any]]:
    """`echo`, `payload`, `sleep` and `k` realistic tools (the 8 templates, numbered after the first round)."""
    tools = [dict(t) for t in CORE_TOOLS]
    for i in range(k):
        name, description, props, required = _TEMPLATES[i % len(_TEMPLATES)]
        suffix = "" if i < len(_TEMPLATES) else f"_{i // len(_TEMPLATES)}"
        tools.append(
            {
                "name": name + suffix,
                "title": name.replace("_", " ").capitalize() + suffix.replace("_", " "),
                "description": description,
                "inputSchema": _obj(props, required),
                "annotations": {"readOnlyHint": name.startswith(("search", "read", "list", "fetch"))},
            }
        )
    return tools


def payload_text(n: int) -> str:
    """`n` bytes of ASCII text (lines of 64 characters)."""
    line = ("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ#\n") * (n // 64 + 1)
    return line[:n]

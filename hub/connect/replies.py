"""What an HTTP answer from the hub says, for hub connect's messages: its content type, its JSON-RPC error, a reason."""

from __future__ import annotations

import json
from typing import Any

import httpx2


def content_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def reason(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def error_of(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error an HTTP error response carries, if it carries one (its id may be null)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def said(body: bytes) -> str:
    """What an HTTP error response says: its JSON-RPC error's message, else its text; cut for a message."""
    error = error_of(body)
    return (str(error.get("message", "")) if error is not None else body.decode("utf-8", "replace"))[:200]

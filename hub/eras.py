"""Bridging the two protocol eras between a host and a child (the matrix in docs/protocols.md).

Handshake era (2024-11-05 .. 2025-11-25): server-to-client requests, `logging/setLevel`, notifications on the
connection. 2026-07-28: none of those; instead per-request log opt-in (`_meta` logLevel), change events on
`subscriptions/listen`, and input-required rounds (`InputRequiredResult`, retried with `inputResponses`).

This module holds what the hub does differently per era, so that the router and the child supervisor only
ask "which era is this peer" and call one function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import anyio
import mcp_types as types
import structlog
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

# A child that keeps answering input_required past this many rounds is given up on (the SDK's default too).
MAX_INPUT_ROUNDS = 10
# Re-listen backoff when a 2026 child's subscriptions/listen stream drops.
RELISTEN_BASE = 0.5
RELISTEN_CAP = 30.0

_INPUT_REQUEST: Any = TypeAdapter(types.InputRequest)
_log = structlog.get_logger("hub.eras")


def is_modern(protocol_version: str | None) -> bool:
    return protocol_version in MODERN_PROTOCOL_VERSIONS


def client_mode(protocol: str) -> Literal["legacy", "auto"]:
    """The SDK `Client` mode for a child's `protocol:` setting.

    A pinned "2026-07-28" still connects with `auto`: the SDK's pinned mode skips `server/discover` and so
    knows none of the child's capabilities (the hub would list nothing). `check_child_era` then insists.
    """
    return "legacy" if protocol == "legacy" else "auto"


def check_child_era(protocol: str, client: Client) -> None:
    """A child pinned to a 2026 revision that negotiated the handshake era is a configuration error.

    Raises:
        RuntimeError: with the reason, reported as the child's error.
    """
    if protocol in MODERN_PROTOCOL_VERSIONS and client.protocol_version != protocol:
        raise RuntimeError(
            f"the server speaks {client.protocol_version}, not {protocol} as 'protocol:' requires; "
            "use 'protocol: auto' or 'legacy'"
        )


async def follow_changes(name: str, client: Client) -> None:
    """Keep a `subscriptions/listen` stream open to a 2026 child that advertises listChanged.

    A 2026 child announces list changes only on that stream; its events are also delivered to the client's
    `message_handler`, which re-reads the child's lists exactly as for a handshake-era notification. Opened
    only when advertised: a child without a listen handler answers -32601, which is not a lost connection.
    Runs until cancelled (the connection's end).
    """
    if not is_modern(client.protocol_version):
        return
    caps = client.session.server_capabilities or types.ServerCapabilities()
    wanted = {
        "tools_list_changed": bool(caps.tools and caps.tools.list_changed),
        "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
        "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
    }
    if not any(wanted.values()):
        return
    delay = RELISTEN_BASE
    while True:
        try:
            async with client.listen(
                tools_list_changed=wanted["tools_list_changed"],
                prompts_list_changed=wanted["prompts_list_changed"],
                resources_list_changed=wanted["resources_list_changed"],
            ) as subscription:
                delay = RELISTEN_BASE
                async for _event in subscription:
                    pass  # the same events reach Child._on_message, which re-reads the lists
        except MCPError as exc:
            if exc.error.code == types.METHOD_NOT_FOUND:
                _log.warning("child_listen_unsupported", child=name)
                return
            _log.warning("child_listen_failed", child=name, error=exc.error.message)
        except (SubscriptionLost, TimeoutError) as exc:
            _log.warning("child_listen_lost", child=name, error=str(exc))
        await anyio.sleep(delay)
        delay = min(RELISTEN_CAP, delay * 2)


def child_log_level(
    host_version: str, host_meta: Mapping[str, Any] | None, stored: types.LoggingLevel | None
) -> str | None:
    """The log opt-in to put on a request to a 2026 child.

    A 2026 host's own per-request opt-in is passed on as it is; a handshake-era host's `logging/setLevel`
    (stored by the hub) becomes the opt-in, else a 2026 child would never send a log line to such a host.
    """
    if is_modern(host_version):
        level = (host_meta or {}).get(types.LOG_LEVEL_META_KEY)
        return level if isinstance(level, str) else None
    return stored


def strip_child_stamp(result: dict[str, Any]) -> dict[str, Any]:
    """Drop a 2026 child's `serverInfo` stamp from its result: the hub stamps its own toward the host."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and types.SERVER_INFO_META_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if rest:
            result["_meta"] = rest
    return result


def is_input_required(result: Mapping[str, Any]) -> bool:
    return result.get("resultType") == "input_required"


AskHost = Callable[[types.ServerRequest], Awaitable[Any]]
Resend = Callable[[dict[str, Any], str | None], Awaitable[dict[str, Any]]]


async def _ask_all(requests: dict[str, Any], ask: AskHost) -> dict[str, Any]:
    """Ask every input request of one round concurrently (a human may answer them in any order)."""
    responses: dict[str, Any] = {}
    refused: list[types.ErrorData] = []

    async def one(key: str, raw: Any) -> None:
        answer = await ask(_INPUT_REQUEST.validate_python(raw, by_name=False))
        if isinstance(answer, types.ErrorData):
            refused.append(answer)
        else:
            responses[key] = answer

    async with anyio.create_task_group() as tg:
        for key, raw in requests.items():
            tg.start_soon(one, key, raw)
    if refused:
        raise MCPError.from_error_data(refused[0])
    return responses


async def drive_input_rounds(first: dict[str, Any], ask: AskHost, resend: Resend) -> dict[str, Any]:
    """Resolve a 2026 child's input-required rounds for a handshake-era host, with real host requests.

    Each round's input requests go to the host concurrently (`ask`, on the stream of the host's own call, so
    there is no guessing whose they are); the child is re-asked with the answers and its `requestState`
    (`resend`) until it returns a final result.

    Raises:
        MCPError: the host refused or failed an input request, or the child asked for too many rounds.
    """
    result = first
    for _ in range(MAX_INPUT_ROUNDS):
        if not is_input_required(result):
            return result
        responses = await _ask_all(result.get("inputRequests") or {}, ask)
        result = await resend(responses, result.get("requestState"))
    raise MCPError(
        code=types.INTERNAL_ERROR, message=f"hub: the server asked for input more than {MAX_INPUT_ROUNDS} times"
    )

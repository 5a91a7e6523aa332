"""Requests the hub sends a host (a child's sampling, elicitation or roots request, a confirmation question), each
waiting, bounded, for the host's answer; and `Stream`, where the messages about one host request go: the session's
own channel (stdio's wire, an HTTP session's GET stream) or the response of the host request it comes during.
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio

from hub.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    EncodeError,
    RequestId,
    Response,
    request_line,
)
from hub.relay.ports import AskFailed


class Stream(Protocol):
    """Where the messages about one request go: the stdio wire, or an HTTP request's response."""

    def send(self, line: bytes) -> None:
        """A message before the answer (a notification, a request to the host)."""

    def end(self, line: bytes | None) -> None:
        """The answer (None: there is none, the request was cancelled); nothing is sent after it."""


def usable(stream: Stream | None) -> bool:
    """Whether a request can be sent on `stream`: it exists and is not closed."""
    return stream is not None and not getattr(stream, "closed", False)


class _Answer:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.response: Response | None = None
        self.why: str | None = None

    def set(self, response: Response | None, why: str | None = None) -> None:
        if not self.done.is_set():
            self.response, self.why = response, why
            self.done.set()


class HostAsks:
    """One session's requests to its host, by id, until each is answered, fails or times out."""

    def __init__(self) -> None:
        self._ids = 0
        self._waiting: dict[RequestId, _Answer] = {}

    async def send(self, stream: Stream, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """Send the host a request on `stream` and wait (bounded) for its answer.

        Raises:
            AskFailed: the host answered with an error, did not answer in time, or the session ended first.
        """
        try:
            line = request_line(self._ids + 1, method, params)
        except EncodeError as exc:  # what a child asks for, nested too deeply or with a number out of range
            message = f"hub: the {method} request cannot be relayed: {exc}"
            raise AskFailed({"code": INVALID_PARAMS, "message": message}) from None
        self._ids += 1
        ask_id = self._ids
        answer = _Answer()
        self._waiting[ask_id] = answer
        # An HTTP call's stream that ends without its answer (the host cancelled the call) fails the ask then. One
        # that ends with its answer has carried this request already, and the host answers it in a POST of its own:
        # a child's roots/list sent just as the call it came during was answered still gets the host's roots.
        ended = getattr(stream, "on_end", None)
        if ended is not None:

            def on_end() -> None:
                if getattr(stream, "answer", None) is None:
                    answer.set(None, f"the host's request ended before it answered {method}")

            ended.append(on_end)
        try:
            stream.send(line)
            with anyio.move_on_after(limit_s):
                await answer.done.wait()
        finally:
            self._waiting.pop(ask_id, None)
        response = answer.response
        if response is None:
            why = answer.why or f"the host did not answer {method} within {limit_s:g}s"
            raise AskFailed(
                {"code": REQUEST_TIMEOUT if answer.why is None else INVALID_REQUEST, "message": f"hub: {why}"}
            )
        if response.error is not None:
            raise AskFailed(response.error)
        return response.result or {}

    def answered(self, response: Response) -> None:
        """The host's answer to one of the requests (an answer to none is dropped)."""
        answer = self._waiting.pop(response.id, None)
        if answer is not None:
            answer.set(response)

    def refused(self, ask_id: RequestId | None, reason: str) -> bool:
        """The host's answer to a request was unusable: that request fails. False if it answers none."""
        answer = self._waiting.pop(ask_id, None) if ask_id is not None else None
        if answer is None:
            return False
        answer.set(None, f"the host's answer was invalid ({reason})")
        return True

    def fail(self, why: str) -> None:
        """Every request waiting fails with `why` (the session ended)."""
        for answer in self._waiting.values():
            answer.set(None, why)

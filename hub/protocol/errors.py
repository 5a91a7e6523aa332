"""Every way a routed request can fail, and the one place that decides what the host gets for it.

    HubError                       the message names the cause and, where there is one, the fix
    ├── BadRequest                 the host's request has params it cannot have (-32602)
    │   └── ArgumentRefused        an argument the config fixes or constrains: an isError result the model reads
    ├── InvalidRequest             the host's request is not valid as a request (-32600: an id already in flight)
    ├── UnknownName                no child serves this tool, prompt or resource (-32602)
    │   └── Denied                 the caller's policy hides it: answered as an unknown name, logged as denied
    ├── HeldBack                   the config holds the tool back (read_only, or quarantined: changed since its pin)
    ├── NotConfirmed               the host's user did not confirm a call that needs it, or could not be asked
    ├── Unavailable                the child is not ready, or its connection ended during the request
    ├── Busy                       the child has max_concurrency requests in flight and max_queue waiting
    ├── TimedOut                   the child did not answer in time; the request was cancelled at the child
    ├── TooLarge                   the child's answer is over max_result_bytes
    └── ChildError                 the child answered with a JSON-RPC error of its own (its code and data kept)

A `tools/call` that fails short of the child's own answer gets an `isError` result naming the child (or the
argument, the hold-back, the missing confirmation): the model reads it and moves on. Everything else, and a request
the host got wrong, gets a JSON-RPC error. `answer` is the only place this mapping is made; the call log takes its
`outcome` from the same object.
"""

from __future__ import annotations

from typing import Any

from hub.protocol.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, REQUEST_TIMEOUT


class HubError(Exception):
    outcome = "error"
    code = INTERNAL_ERROR
    # Whether a tools/call answers it as an isError result rather than a JSON-RPC error.
    tool_result = True

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class BadRequest(HubError):
    code = INVALID_PARAMS
    tool_result = False


class InvalidRequest(HubError):
    code = INVALID_REQUEST
    tool_result = False


class UnknownName(HubError):
    code = INVALID_PARAMS
    tool_result = False


class Denied(UnknownName):
    outcome = "denied"

    def __init__(self, shown: HubError, rule: str | None) -> None:
        super().__init__(shown.message, shown.data)
        self.code = shown.code
        self.tool_result = shown.tool_result
        self.rule = rule


class ArgumentRefused(BadRequest):
    outcome = "invalid_arguments"
    tool_result = True

    def __init__(self, message: str, argument: str) -> None:
        super().__init__(message, {"argument": argument})


class HeldBack(HubError):
    code = INVALID_PARAMS

    def __init__(self, message: str, outcome: str) -> None:
        super().__init__(message)
        self.outcome = outcome


class NotConfirmed(HubError):
    outcome = "not_confirmed"


class Unavailable(HubError):
    outcome = "unavailable"


class Busy(HubError):
    outcome = "busy"


class TimedOut(HubError):
    outcome = "timeout"
    code = REQUEST_TIMEOUT


class TooLarge(HubError):
    outcome = "too_large"


class ChildError(HubError):
    tool_result = False

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message, data)
        self.code = code


def child_error(child: str, error: dict[str, Any]) -> HubError:
    """A child's JSON-RPC error as the host gets it: its code and data, the message naming the child. "Connection
    closed" (-32000, an SDK server whose stdin closes under a request) is the child being unavailable."""
    code = error.get("code")
    message = error.get("message")
    if code == CONNECTION_CLOSED:
        return Unavailable(f"server '{child}' closed the connection ({message})", {"server": child})
    return ChildError(
        code if type(code) is int else INTERNAL_ERROR,
        f"{child}: {message if type(message) is str else 'an error without a message'}",
        error.get("data"),
    )


def answer(error: HubError, method: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What the host gets for `error` on a `method` request: (result, None) or (None, JSON-RPC error)."""
    if method == "tools/call" and error.tool_result:
        return {"content": [{"type": "text", "text": error.message}], "isError": True}, None
    wire: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        wire["data"] = error.data
    return None, wire

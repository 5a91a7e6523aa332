"""tools/call around the SDK: the host's line goes to the child and the child's answer back, parsed once each way.

A pass-through hub does not need to validate, model and re-serialise a result it forwards unchanged, yet the SDK
path does that twice per call plus a dozen task hops (docs/performance.md). The common call takes this lane
instead, from the stdio front (`offer`) and from HTTP hosts through hub/http_passthrough.py (`offer_streamed`,
answered on the call's own `Stream`):

- the host is handshake-era and initialized: over stdio the hub's only host connection, over HTTP a session
  opened without credentials;
- `params` holds only `name`, `arguments` and `_meta`, and the name routes to a child's tool;
- that child is a ready stdio child on its shared connection (`sessions: shared`), handshake-era too.

Anything else (the builtin tool, unknown names, 2026 peers, `sessions: per-host`, URL children, task-augmented
calls) takes the SDK path exactly as before; a call beyond max_concurrency waits in the lane. On the SDK path (HTTP
hosts with credentials, 2026 hosts, among others), a request to such a child still goes to it as a raw line
(`request`): only the host side is the SDK's.

The lane keeps what the core issue requires of a call: the prefix stripped, the result passed back as the child's
JSON with its URIs renamed, progress under the host's token with the deadline moved by each one, cancellation
passed on, per-tool timeouts, the concurrency limit, a child's requests and logs during the call routed to the
host, an isError result naming the child when it fails, and the call-log line.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.connection import Connection
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result

from hub.child import Child, ChildState
from hub.eras import is_modern
from hub.naming import expose_uri, map_uris
from hub.relay import Unattached
from hub.router import RESERVED_META_PREFIX
from hub.transports import StdioProcess, describe_exit

if TYPE_CHECKING:
    from hub.hub import Hub
    from hub.warm_start import WarmStart

# Request ids of the lane's calls to children: far above the SDK session's own (counted up from 0), so that one
# look at a child's answer tells whose it is.
FIRST_ID = 1 << 40
# Upper bound on waiting for a request's last progress notifications to be relayed once its result is in.
PROGRESS_DRAIN = 1.0
# How long a child whose output ended may take to report its exit status, for the error message.
SETTLE_EXIT = 1.0

_PARAMS = frozenset({"name", "arguments", "_meta"})
_ID_TYPES = (int, str)  # JSON-RPC ids and progress tokens; `type(x) in` also keeps bool out
Writer = Callable[[bytes], Awaitable[None]]


class Stream(Protocol):
    """Where one call's messages go when its host is not the stdio front: an HTTP request's response stream."""

    def send(self, line: bytes) -> None:
        """A notification for the host (progress), before the answer."""

    def end(self, line: bytes | None) -> None:
        """The answer, which ends the stream; None when the call was cancelled and gets none."""


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _json(value: Any) -> bytes:
    return _JSON.encode(value).encode()


def _encode(message: dict[str, Any]) -> bytes:
    return _json(message) + b"\n"


def _child_meta(meta: dict[str, Any] | None, token: int | None) -> dict[str, Any] | None:
    """The host's `_meta` as the child sees it: the hub's own progress token, no reserved protocol keys."""
    if not meta and token is None:
        return None
    kept = {k: v for k, v in (meta or {}).items() if k != "progressToken" and not k.startswith(RESERVED_META_PREFIX)}
    if token is not None:
        kept["progressToken"] = token
    return kept or None


@dataclass(eq=False, slots=True)
class _Call:
    host_id: int | str
    child_id: int
    child: Child
    entry: Unattached  # the host's connection, in the child's in-flight list while the call is there
    stream: Stream | None  # None: the stdio front's host
    line: bytes  # the request as the child gets it
    exposed: str
    original: str
    host_token: int | str | None
    window: float
    max_timeout: float
    bytes_in: int
    arguments: Any  # for the call log, when the config logs them
    began: float = field(default_factory=time.perf_counter)
    # Set when it is sent: until then it waits for a max_concurrency slot.
    process: StdioProcess | None = None
    deadline: float = math.inf
    ceiling: float = math.inf

    @property
    def key(self) -> tuple[int, int | str]:
        """Request ids are per host connection: two HTTP sessions may both have a call 1 in flight."""
        return id(self.entry.connection), self.host_id


@dataclass(eq=False, slots=True)
class _Waiter:
    """A request of the SDK path sent around the child's session (`PassThrough.request`), until it is answered."""

    process: StdioProcess
    on_progress: ProgressFnT
    done: anyio.Event = field(default_factory=anyio.Event)
    message: dict[str, Any] = field(default_factory=dict)
    relaying: int = 0  # progress notifications being relayed now
    relayed: anyio.Event = field(default_factory=anyio.Event)

    async def relay(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            await self.on_progress(progress, total, message)
        finally:
            self.relaying -= 1
            if self.relaying == 0:
                self.relayed.set()

    def answer(self, message: dict[str, Any]) -> None:
        if not self.done.is_set():
            self.message = message
            self.done.set()

    def result(self) -> dict[str, Any]:
        result, error = self.message.get("result"), self.message.get("error")
        if type(result) is dict:
            return result
        if type(error) is dict:
            code = error.get("code")
            raise MCPError(
                code=code if type(code) is int else types.INTERNAL_ERROR,
                message=str(error.get("message")),
                data=error.get("data"),
            )
        raise MCPError(code=types.INTERNAL_ERROR, message="the server sent an answer with neither result nor error")


class PassThrough:
    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._write: Writer | None = None
        self._write_nowait: Callable[[bytes], bool] | None = None
        self._host: Unattached | None = None  # the attached host's connection, once known
        self._ids = itertools.count(FIRST_ID)
        self._by_child: dict[int, _Call] = {}
        self._by_host: dict[tuple[int, int | str], _Call] = {}  # sent or queued, by (host connection, host id)
        self._waiters: dict[int, _Waiter] = {}  # the SDK path's requests, by child-side id
        self._deadlines: list[tuple[float, int]] = []
        self._watch_until = math.inf
        self._wake = anyio.Event()
        self._task_group: TaskGroup | None = None
        # The encoded tools/list result and what it was made from: (namespace, config, protocol version, bytes).
        self._listing: tuple[object, object, str, bytes] | None = None
        self.warm: WarmStart | None = None  # keeps the complete listing for the next start (stdio serve only)

    # ---- the host side --------------------------------------------------------------------------------

    def attach(self, write: Writer, write_nowait: Callable[[bytes], bool] | None = None) -> None:
        """Serve the one host whose wire `write` writes to (the stdio front); `write_nowait` writes at once or not."""
        self._write = write
        self._write_nowait = write_nowait

    def detach(self) -> None:
        self._write = None
        self._write_nowait = None
        self._host = None
        for child in self._hub.children.values():
            for call in [c for c in child.queued if c.stream is None]:
                child.queued.remove(call)
        for call in [c for c in self._by_child.values() if c.stream is None]:
            self._finish(call)  # nobody is left to answer
        for key in [k for k, c in self._by_host.items() if c.stream is None]:
            del self._by_host[key]

    def offer(self, message: dict[str, Any]) -> bool:
        """Take the stdio host's tools/call request if the lane can carry it; False leaves it to the SDK path."""
        host = (self._host or self._find_host()) if self._write is not None else None
        return host is not None and self._take_call(message, host, None) is not None

    def offer_streamed(self, message: dict[str, Any], host: Unattached, stream: Stream) -> float | None:
        """Take an HTTP host's tools/call request (hub/http_passthrough.py), its messages going to `stream`.

        Returns the longest the call may take (its deadline can move with progress, up to that), or None if the
        lane does not take it.
        """
        call = self._take_call(message, host, stream)
        return None if call is None else call.max_timeout

    def _take_call(self, message: dict[str, Any], host: Unattached, stream: Stream | None) -> _Call | None:
        call = self._admit(message, host, stream)
        if call is None:
            return None
        child = call.child
        if child.reserve(call):
            return call if self._send(call) else None  # None: the child just went away; the SDK path reports it
        if child.waiting >= child.config.max_queue:
            return None  # the SDK path refuses it (ChildBusy), with the same message as ever
        child.queued.append(call)
        self._by_host[call.key] = call
        return call

    def _admit(self, message: dict[str, Any], host: Unattached, stream: Stream | None) -> _Call | None:
        host_id, params = message.get("id"), message.get("params")
        if type(params) is not dict or not params.keys() <= _PARAMS:
            return None
        if type(host_id) not in _ID_TYPES or (id(host.connection), host_id) in self._by_host:
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if type(name) is not str or (arguments is not None and type(arguments) is not dict):
            return None
        if meta is not None and type(meta) is not dict:
            return None
        token = meta.get("progressToken") if meta else None
        if token is not None and type(token) not in _ID_TYPES:
            return None
        hub = self._hub
        route = hub.namespace.tool_routes.get(name)
        child = hub.children.get(route.child) if route is not None else None
        if route is None or child is None or child.direct is None or child.state is not ChildState.READY:
            return None
        child_id = next(self._ids)
        # The child's line is put together around the arguments' own encoding, which also gives bytes_in.
        line = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%b' % (child_id, _json(route.original))
        encoded = b""
        if "arguments" in params:
            encoded = _json(arguments)
            line += b',"arguments":' + encoded
        child_meta = _child_meta(meta, child_id if token is not None else None)
        if child_meta is not None:
            line += b',"_meta":' + _json(child_meta)
        window = child.timeout_for(route.original)
        return _Call(
            host_id=host_id,  # type: ignore[arg-type]  # an int or str, checked above
            child_id=child_id,
            child=child,
            entry=host,
            stream=stream,
            line=line + b"}}\n",
            exposed=name,
            original=route.original,
            host_token=token,
            window=window,
            max_timeout=max(child.config.max_timeout, window),
            bytes_in=len(encoded) if arguments is not None else 0,
            arguments=arguments if hub.log_arguments(child) else None,
        )

    def _find_host(self) -> Unattached | None:
        """The stdio host's connection, once it is initialized and known to be handshake-era (then kept)."""
        connection = self._hub.hosts.only()
        if connection is None or is_modern(connection.protocol_version) or not connection.initialize_accepted:
            return None
        self._host = Unattached(connection)
        return self._host

    def _send(self, call: _Call) -> bool:
        """Send a call that holds a slot; False (slot given back) if the child is no longer connected."""
        process = call.child.direct
        if process is None or not process.send_nowait(call.line):
            call.child.release(call)
            return False
        now = asyncio.get_running_loop().time()  # anyio.current_time() on asyncio, without its backend lookup
        call.process, call.deadline, call.ceiling = process, now + call.window, now + call.max_timeout
        self._by_child[call.child_id] = call
        self._by_host[call.key] = call
        call.child.inflight.append(call.entry)
        heapq.heappush(self._deadlines, (call.deadline, call.child_id))
        if call.deadline < self._watch_until:
            self._wake.set()
        if len(self._deadlines) > 2 * len(self._by_child) + 1024:  # answered calls' entries pile up: drop them
            self._deadlines = [(c.deadline, c.child_id) for c in self._by_child.values()]
            heapq.heapify(self._deadlines)
        return True

    def resume(self, child: Child) -> None:
        """Send the calls waiting for `child` while it has free slots."""
        queue = child.queued
        while queue and child.reserve(queue[0]):
            call = queue.popleft()
            if not self._send(call):
                self._by_host.pop(call.key, None)
                message = child.unavailable_reason()
                self._spawn(self._fail, call, "unavailable", types.INTERNAL_ERROR, message)

    async def list_tools(self, message: dict[str, Any]) -> bool:
        """Answer a handshake-era host's tools/list from encoded bytes kept per namespace; False if not ours.

        The SDK path validates and re-serialises the whole merged listing on every request (261 tools with 20
        children), so its cost grew with the number of children. Here the listing is shaped for the host's revision
        once, by the SDK's own sieve, and every request after that costs one write whatever its size.
        """
        request_id, params = message.get("id"), message.get("params")
        if self._write is None or type(request_id) not in _ID_TYPES:
            return False
        if params is not None and (type(params) is not dict or params.get("cursor") is not None):
            return False
        host = self._host or self._find_host()
        if host is None:
            return False
        if self._hub.startup_wait_left() and self._task_group is not None:
            self._spawn(self._list_after_start, request_id, host)  # the reader goes on meanwhile
            return True
        await self._write_listing(request_id, host)
        return True

    async def _list_after_start(self, request_id: Any, host: Unattached) -> None:
        await self._hub.wait_for_start()
        await self._write_listing(request_id, host)

    async def _write_listing(self, request_id: Any, host: Unattached) -> None:
        listing = self._listing_for(host.connection.protocol_version)
        await self._write_host(b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (_json(request_id), listing))

    def listing_bytes(self, version: str | None = None) -> bytes | None:
        """The encoded tools/list result for the stdio host (or a host of `version`), as `list_tools` would answer."""
        if version is None:
            host = self._host or self._find_host()
            version = None if host is None else host.connection.protocol_version
        return None if version is None else self._listing_for(version)

    def _listing_for(self, version: str) -> bytes:
        """The listing shaped for `version`, encoded once per namespace; kept for the next start once complete."""
        hub, cached = self._hub, self._listing
        if cached is None or cached[0] is not hub.namespace or cached[1] is not hub.loaded or cached[2] != version:
            shaped = serialize_server_result("tools/list", version, {"tools": hub.tool_listing()})
            cached = self._listing = (hub.namespace, hub.loaded, version, _json(shaped))
        if self.warm is not None and hub.settled():
            self.warm.listing(version, cached[3])  # a no-op when the file holds it already
        return cached[3]

    def cancel(self, message: dict[str, Any], connection: Connection | None = None) -> bool:
        """Pass a host's notifications/cancelled on to the child, for a call of this lane; False if not ours.

        `connection`: the HTTP host's that sent it; None for the stdio host.
        """
        params = message.get("params")
        request_id = params.get("requestId") if type(params) is dict else None
        if connection is None and self._host is not None:
            connection = self._host.connection
        if connection is None or type(request_id) not in _ID_TYPES:
            return False
        call = self._by_host.get((id(connection), request_id))  # type: ignore[arg-type]  # an int or str
        if call is None:
            return False
        assert isinstance(params, dict)
        if call.stream is not None:
            call.stream.end(None)  # a cancelled request gets no answer
        process = call.process
        if process is None:  # still queued: the child never saw it
            self._by_host.pop(call.key, None)
            call.child.queued.remove(call)
        else:
            self._finish(call)
            notice: dict[str, Any] = {"requestId": call.child_id}
            if isinstance(params.get("reason"), str):
                notice["reason"] = params["reason"]
            process.send_nowait(_encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": notice}))
        self._log_call(call, "cancelled", 0)
        return True

    # ---- the child side (hub/transports.py Tap) -------------------------------------------------------

    def wants(self, data: dict[str, Any]) -> bool:
        request_id = data.get("id")
        if type(request_id) is int:
            return request_id >= FIRST_ID and "method" not in data
        if data.get("method") == "notifications/progress":
            params = data.get("params")
            token = params.get("progressToken") if type(params) is dict else None
            return type(token) is int and token >= FIRST_ID
        return False

    async def take(
        self, process: StdioProcess, data: dict[str, Any], raw: bytes | bytearray, exact: bytes | None = None
    ) -> None:
        if "method" in data:
            await self._progress(data["params"])
            return
        if self.take_nowait(process, data, raw, exact):
            return
        call = self._by_child[data["id"]]  # what take_nowait leaves: an error, or no way to write at once
        self._finish(call)
        result, error = data.get("result"), data.get("error")
        if type(result) is dict:
            line, size = self._result_line(call, result, raw, exact)
            await self._deliver(call, line, last=True)
            self._log_result(call, result, size)
        elif type(error) is dict:
            await self._child_error(call, error)
        else:
            await self._fail(call, "error", types.INTERNAL_ERROR, f"server '{call.child.name}' sent an invalid answer")

    def take_nowait(
        self, process: StdioProcess, data: dict[str, Any], raw: bytes | bytearray, exact: bytes | None
    ) -> bool:
        """`take` for an answer, done at once from the child pipe's callback; False leaves it to `take`.

        A pass-through call's result is written now when the host's pipe takes it whole without waiting, else by
        a task, after the same bookkeeping and call-log line as `take`. An answer to the SDK path's request wakes
        its waiter, as in `take`.
        """
        call = self._by_child.get(data["id"])
        if call is None:  # an answer to the SDK path's request (an HTTP host's call, say), or a late one
            waiter = self._waiters.get(data["id"])
            if waiter is not None:
                waiter.answer(data)
            return True  # a late one (timed out or cancelled) is dropped
        result, write = data.get("result"), self._write_nowait
        if type(result) is not dict or (call.stream is None and write is None) or self._task_group is None:
            return False
        line, size = self._result_line(call, result, raw, exact)
        if call.stream is not None:
            call.stream.end(line)
        elif write is not None and not write(line):
            self._spawn(self._write_host, line)
        # After the answer is on its way: the bookkeeping and the call-log line are off the host's wait.
        self._finish(call)
        self._log_result(call, result, size)
        return True

    def _result_line(
        self, call: _Call, result: dict[str, Any], raw: bytes | bytearray, exact: bytes | None
    ) -> tuple[bytes, int]:
        """The host's answer to `call`, and the size of its result for the call log."""
        if call.child.prefix and b'"uri"' in raw:  # a resource link or embedded resource, maybe
            result = map_uris(result, lambda uri: expose_uri(call.child.prefix, uri))
            exact = None
        encoded = exact if exact is not None else _json(result)  # the child's own bytes when they can be cut out
        return b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (_json(call.host_id), encoded), len(encoded)

    def _log_result(self, call: _Call, result: dict[str, Any], size: int) -> None:
        self._log_call(call, "tool_error" if result.get("isError") else "ok", size)

    def closed(self, process: StdioProcess) -> None:
        calls = [call for call in self._by_child.values() if call.process is process]
        if calls:
            self._spawn(self._connection_lost, process, calls)
        for waiter in self._waiters.values():
            if waiter.process is process:
                waiter.answer({"error": {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}})

    async def _progress(self, params: dict[str, Any]) -> None:
        call = self._by_child.get(params["progressToken"])
        if call is None:
            waiter = self._waiters.get(params["progressToken"])
            if waiter is not None:  # relayed in a task, as the SDK session does: the reader never waits on a host
                if waiter.relaying == 0:
                    waiter.relayed = anyio.Event()
                waiter.relaying += 1
                self._spawn(waiter.relay, params.get("progress"), params.get("total"), params.get("message"))
            return
        if call.host_token is None:
            return
        call.deadline = min(anyio.current_time() + call.window, call.ceiling)
        notice = {**params, "progressToken": call.host_token}
        await self._deliver(call, _encode({"jsonrpc": "2.0", "method": "notifications/progress", "params": notice}))

    async def _child_error(self, call: _Call, error: dict[str, Any]) -> None:
        code, message, data = error.get("code"), str(error.get("message")), error.get("data")
        if isinstance(data, dict) and data.get("reason") == "result_too_large":
            await self._fail(call, "error", types.INTERNAL_ERROR, message)
        elif code == types.REQUEST_TIMEOUT:
            await self._fail(call, "timeout", types.REQUEST_TIMEOUT, f"{call.child.name}: {message}")
        else:
            # The child's own protocol error keeps its code and data, as on the SDK path.
            answer: dict[str, Any] = {"code": code, "message": f"{call.child.name}: {message}"}
            if data is not None:
                answer["data"] = data
            self._log_call(call, "error", 0, code, answer["message"])
            await self._answer(call, {"jsonrpc": "2.0", "id": call.host_id, "error": answer})

    async def _connection_lost(self, process: StdioProcess, calls: list[_Call]) -> None:
        with anyio.move_on_after(SETTLE_EXIT):
            await process.exited.wait()
        parts = [f"server '{process.name}' closed the connection"]
        if process.returncode is not None:
            parts.append(describe_exit(process.returncode))
        if process.stderr_tail:
            parts.append("last stderr: " + " | ".join(list(process.stderr_tail)[-5:]))
        for call in calls:
            if self._by_child.get(call.child_id) is call:
                self._finish(call)
                await self._fail(call, "unavailable", types.INTERNAL_ERROR, "; ".join(parts))

    # ---- requests of the SDK path, sent around the child's SDK session -------------------------------

    async def request(self, process: StdioProcess, request: Any, on_progress: ProgressFnT) -> dict[str, Any]:
        """Send a request of the SDK path (hub/router.py) to a stdio child as one line; return its raw result.

        The host side stays the SDK's (HTTP hosts, 2026 hosts, the builtin paths); what is skipped is the child's
        SDK session, which validated and re-dumped every result and spent a task per request. The caller's cancel
        scope holds the deadline (`send_with_deadline`); `on_progress` gets the child's progress.

        Raises:
            MCPError: the child's own error, or CONNECTION_CLOSED when its output ends first (as the SDK session).
        """
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        child_id = next(self._ids)
        params = data.get("params") or {}
        params["_meta"] = {**(params.get("_meta") or {}), "progressToken": child_id}
        waiter = _Waiter(process, on_progress)
        self._waiters[child_id] = waiter
        try:
            if not process.send_nowait(
                _encode({"jsonrpc": "2.0", "id": child_id, "method": data["method"], "params": params})
            ):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
            await waiter.done.wait()
            if waiter.relaying:  # the child's last progress, read before its result, reaches the host first
                with anyio.move_on_after(PROGRESS_DRAIN):
                    await waiter.relayed.wait()
        except anyio.get_cancelled_exc_class():
            if not waiter.done.is_set():  # the child is still working on it
                notice = {"requestId": child_id, "reason": "cancelled by the hub"}
                process.send_nowait(_encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": notice}))
            raise
        finally:
            del self._waiters[child_id]
        return waiter.result()

    # ---- deadlines ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Expire calls whose deadline passed, until cancelled."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            try:
                while True:
                    now = anyio.current_time()
                    while self._deadlines and self._deadlines[0][0] <= now:
                        _, child_id = heapq.heappop(self._deadlines)
                        call = self._by_child.get(child_id)
                        if call is None:
                            continue
                        if call.deadline > now:  # moved by progress
                            heapq.heappush(self._deadlines, (call.deadline, child_id))
                            continue
                        self._finish(call)
                        tg.start_soon(self._expire, call)
                    # Answered calls' entries stay until their deadline, so a new call (whose deadline is later)
                    # rarely has to wake the watcher; with nothing in flight for a while it sleeps for good.
                    self._watch_until = self._deadlines[0][0] if self._deadlines else math.inf
                    self._wake = anyio.Event()
                    with anyio.move_on_after(self._watch_until - now):
                        await self._wake.wait()
            finally:
                self._task_group = None

    async def _expire(self, call: _Call) -> None:
        notice = {"requestId": call.child_id, "reason": "timeout"}
        assert call.process is not None
        call.process.send_nowait(_encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": notice}))
        elapsed = time.perf_counter() - call.began
        message = (
            f"server '{call.child.name}' did not answer within {elapsed:.3g}s (timeout {call.window:g}s); "
            "the request was cancelled"
        )
        await self._fail(call, "timeout", types.REQUEST_TIMEOUT, message)

    # ---- bookkeeping ----------------------------------------------------------------------------------

    def _finish(self, call: _Call) -> None:
        """The call leaves the lane's tables and releases its child slot; its answer, if any, is up to the caller."""
        if self._by_child.pop(call.child_id, None) is None:
            return
        self._by_host.pop(call.key, None)
        with suppress(ValueError):
            call.child.inflight.remove(call.entry)
        call.child.release(call)
        self.resume(call.child)

    def _spawn(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        if self._task_group is not None:
            self._task_group.start_soon(func, *args)

    async def _answer(self, call: _Call, message: dict[str, Any]) -> None:
        """The call's answer (a result or an error): the last message for it."""
        await self._deliver(call, _encode(message), last=True)

    async def _deliver(self, call: _Call, line: bytes, last: bool = False) -> None:
        stream = call.stream
        if stream is None:
            await self._write_host(line)
        elif last:
            stream.end(line)
        else:
            stream.send(line)

    async def _write_host(self, line: bytes) -> None:
        write = self._write
        if write is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the host is gone: the front ends
                await write(line)

    async def _fail(self, call: _Call, outcome: str, code: int, message: str) -> None:
        """A tool call that failed short of the child's own answer: an isError result naming the child."""
        result = {"content": [{"type": "text", "text": message}], "isError": True}
        self._log_call(call, outcome, 0, code, message)
        await self._answer(call, {"jsonrpc": "2.0", "id": call.host_id, "result": result})

    def _log_call(
        self, call: _Call, outcome: str, size: int, code: int | None = None, message: str | None = None
    ) -> None:
        """The same line as hub/router.py's; for a result, written just after the answer (it is off the hot path)."""
        connection = call.entry.connection
        fields: dict[str, Any] = {
            "method": "tools/call",
            "host_session": connection.session_id or f"conn-{id(connection):x}",
            "request_id": call.host_id,
            "child": call.child.name,
            "name": call.exposed,
            "original": call.original,
            "duration_ms": round((time.perf_counter() - call.began) * 1000, 2),
            "outcome": outcome,
            "bytes_in": call.bytes_in,
            "bytes_out": size,
        }
        if code is not None or message is not None:
            fields["error_code"], fields["error_message"] = code, message
        if call.arguments is not None:
            fields["arguments"] = call.arguments
        self._hub.call_log(fields)

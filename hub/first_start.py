"""First start: the host's first answers come from the children themselves while the hub imports the SDK.

The warm start (hub/warm_start.py) answers a stdio host's initialize and tools/list from the last run's cache. On a
first start (a new or edited servers.yaml) there is no cache, and the SDK's import, over a second of CPU, came
before any child was asked anything: 5 children that start in 0.1 s were listed after 1.7 s. So on a first start
the hub starts its stdio children before the import, and the warm-start thread does what their connections would do
first (initialize, notifications/initialized, tools/list), in plain JSON lines, while the main thread imports. The
host's initialize is answered at once; its first tools/list as soon as every child has listed its tools.

Nothing is made up, and nothing is done twice:

- the initialize result is what the hub's SDK server answers (tests/integration/test_first_start.py holds them
  equal); the SDK session is shown the host's initialize afterwards, and a difference is logged and rewrites the
  cache;
- each child sees one handshake: its first connection adopts this one (`Handshake`, hub/transports.py), and an
  initialize the SDK would send differently from `CLIENT_PARAMS` is logged (a test holds them equal);
- tools are merged as hub/registry.py merges them (config order, prefixes, allow/deny, the first name wins). Once
  every child has settled, the hub compares this listing with its own and sends tools/list_changed if they differ.

A listing is answered here only to a host of a handshake revision (2024-11-05 to 2025-11-25: the SDK shapes a
listing the same for all of them, and leaves this merge as it is; a test holds both) and only if every enabled
server is a stdio child that answered; otherwise the request waits for the SDK, as before. This module imports
nothing of the SDK.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hub.identity import CLIENT_PARAMS, HANDSHAKE_VERSIONS, HEALTH_TOOL, HEALTH_TOOL_DEF
from hub.naming import expose_tool_name

if TYPE_CHECKING:
    from hub.config import LoadedConfig, ToolFilter
    from hub.spawn import Spawned

# Ids of the probe's requests: strings, apart from the SDK's integer ids.
INIT_ID = "hub-first-start-initialize"
LIST_ID = "hub-first-start-tools-list-"
# Pages of tools/list followed per child; more and the listing is left to the SDK.
MAX_PAGES = 20


@dataclass
class Handshake:
    """How far the probe got with one child, for its first connection to take over (hub/transports.py)."""

    initialize_sent: bool = False
    result: dict[str, Any] | None = None  # the child's answer to the probe's initialize
    error: dict[str, Any] | None = None  # or its error
    initialized_sent: bool = False
    leftover: bytes = b""  # what the probe read from the child's stdout and did not consume


@dataclass
class _Probed:
    name: str
    prefix: str
    rules: ToolFilter
    stdin_fd: int
    stdout_fd: int
    handshake: Handshake
    buffer: bytes = b""
    tools: list[dict[str, Any]] = field(default_factory=list)
    pages: int = 0
    cursors: set[Any] = field(default_factory=set)
    listed: bool = False
    failed: bool = False


class Probe:
    """The children's side of the first start, driven by the warm-start thread (`EarlyFront`) until `release`."""

    def __init__(self, children: list[_Probed], complete_config: bool, health_tool: bool) -> None:
        self._children = children
        self._by_fd = {child.stdout_fd: child for child in children}
        self._complete_config = complete_config  # every enabled server is one of `children`
        self._health_tool = health_tool

    @classmethod
    def start(cls, loaded: LoadedConfig, spawned: dict[str, Spawned]) -> Probe:
        """Send each spawned child the initialize its SDK connection would send."""
        servers = loaded.config.servers
        children: list[_Probed] = []
        for name, server in servers.items():  # config order: the order the registry merges in
            process = spawned.get(name)
            stdin_fd = _stdin_fd(process) if process is not None else None
            if process is None or stdin_fd is None or server.protocol != "legacy":
                continue
            handshake = Handshake()
            process.handshake = handshake
            child = _Probed(
                name,
                loaded.prefix_of(name),
                server.tools,
                stdin_fd,
                process.stdout_fd,
                handshake,
            )
            children.append(child)
        enabled = [name for name, server in servers.items() if server.enabled]
        probe = cls(children, len(children) == len(enabled), loaded.config.hub.health_tool)
        for child in children:
            child.handshake.initialize_sent = probe._send(
                child, {"jsonrpc": "2.0", "id": INIT_ID, "method": "initialize", "params": CLIENT_PARAMS}
            )
            child.failed = not child.handshake.initialize_sent
        return probe

    def fds(self) -> list[int]:
        """The stdout pipes still to be read."""
        return [c.stdout_fd for c in self._children if not c.listed and not c.failed]

    def readable(self, fd: int) -> None:
        child = self._by_fd[fd]
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            child.failed = True  # it exited: its connection finds out and reports it
            return
        child.buffer += chunk
        while not child.listed and not child.failed and b"\n" in child.buffer:
            line, child.buffer = child.buffer.split(b"\n", 1)
            if not self._take(child, line):
                child.buffer = line + b"\n" + child.buffer  # not ours: the connection reads it, in order
                child.failed = True  # anything else first (a request, a log): the SDK takes it from here

    def _take(self, child: _Probed, line: bytes) -> bool:
        """Consume one line of the child's: True if it was an answer to the probe."""
        if not line.strip():
            return True
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if type(message) is not dict or "method" in message:
            return False
        request_id = message.get("id")
        if request_id == INIT_ID:
            result, error = message.get("result"), message.get("error")
            if type(result) is not dict or result.get("protocolVersion") not in HANDSHAKE_VERSIONS:
                child.handshake.error = error if type(error) is dict else None
                child.handshake.result = result if type(result) is dict else None
                child.failed = True  # the SDK connection reports the refusal or the revision
                return True
            child.handshake.result = result
            child.handshake.initialized_sent = self._send(
                child, {"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            capabilities = result.get("capabilities")
            if type(capabilities) is not dict or capabilities.get("tools") is None:
                child.listed = True  # no tools to list (hub/child.py lists what a child declares)
            else:
                self._list(child, None)
            return True
        if type(request_id) is str and request_id == f"{LIST_ID}{child.pages}":
            result = message.get("result")
            tools = result.get("tools") if type(result) is dict else None
            if type(tools) is not list:
                child.failed = True  # an error or a malformed listing: the SDK connection reports it
                return True
            child.tools.extend(t for t in tools if type(t) is dict)
            cursor = result.get("nextCursor") if type(result) is dict else None
            if not cursor or cursor in child.cursors:  # as hub/child.py reads pages
                child.listed = True
            elif child.pages >= MAX_PAGES:
                child.failed = True
            else:
                child.cursors.add(cursor)
                self._list(child, cursor)
            return True
        return False

    def _list(self, child: _Probed, cursor: Any) -> None:
        child.pages += 1
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": f"{LIST_ID}{child.pages}", "method": "tools/list"}
        if cursor is not None:
            request["params"] = {"cursor": cursor}
        child.failed = not self._send(child, request)

    @staticmethod
    def _send(child: _Probed, message: dict[str, Any]) -> bool:
        data = memoryview(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        try:
            while data:  # small messages into an empty pipe: this does not wait
                data = data[os.write(child.stdin_fd, data) :]
        except BlockingIOError:
            return False  # the connection gets a child in an unknown state only if this was a partial line
        except OSError:
            return False
        return True

    def listing(self) -> bytes | None:
        """The merged tools/list result, once every enabled server is a child that listed its tools."""
        if not self._complete_config or not all(child.listed for child in self._children):
            return None
        taken: set[str] = {HEALTH_TOOL} if self._health_tool else set()
        tools: list[dict[str, Any]] = [HEALTH_TOOL_DEF] if self._health_tool else []
        for child in self._children:
            for tool in child.tools:
                name = str(tool.get("name", ""))
                if not child.rules.allows(name):
                    continue
                exposed = expose_tool_name(child.prefix, name)
                if exposed in taken:
                    continue  # the registry keeps the first and reports the collision
                taken.add(exposed)
                tools.append(tool if name == exposed else {**tool, "name": exposed})
        return json.dumps({"tools": tools}, separators=(",", ":")).encode()

    def release(self) -> None:
        """Stop: each child's connection takes over from where its handshake is, with the bytes left unread."""
        for child in self._children:
            child.handshake.leftover = child.buffer
            child.buffer = b""


def _stdin_fd(spawned: Spawned) -> int | None:
    """The child's stdin pipe under anyio's stream (the asyncio backend's), or None."""
    writer = getattr(spawned.process.stdin, "_stream", None)
    transport = getattr(writer, "transport", None)
    pipe = transport.get_extra_info("pipe") if transport is not None else None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        return int(pipe.fileno()) if pipe is not None else None
    return None

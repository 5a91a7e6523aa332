"""Warm start: a stdio host's initialize and tools/list answered while the hub is still importing the SDK.

Importing the MCP SDK costs over a second of CPU (its types build pydantic models for every protocol revision)
before the hub can answer anything. A desktop host starts the hub with the same servers.yaml every time, so the
hub keeps what it last answered a stdio host, the initialize result and the complete tools/list, in a cache file
keyed by the config file (path and bytes), the hub's version and the SDK's. On the next start a thread answers
those two requests (and pings) from the file while the main thread imports; every other line the host sends is
held and handed to the SDK session in order.

Nothing is made up. The SDK session is given the host's initialize under an id of the hub's own, and its answer,
which the host never sees, is compared with the one the host got: a difference is logged and rewrites the file.
A cached listing can be stale (a child changed its tools since): once every child has settled the hub compares
the listing with what the host was sent and sends tools/list_changed if they differ; a call to a tool of a child
still starting waits for that child.

This module imports nothing of the SDK: it runs before the SDK is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hub import __version__
from hub.identity import HANDSHAKE_VERSIONS, initialize_result

if TYPE_CHECKING:
    from hub.first_start import Probe

FORMAT = 1
KEEP_FILES = 32  # cache files kept in the directory, the most recently written ones
CACHE_DIR_ENV = "HUB_CACHE_DIR"
# The id under which the SDK session is given a host's initialize that was answered from the cache.
REPLAY_ID = "hub-warm-start-initialize"
# How long the thread may take to finish writing an answer once told to stop (the host must be reading).
STOP_LIMIT = 30.0
_ID_TYPES = (int, str)


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hub"


def _sdk_identity() -> str:
    """The installed SDK's distributions (name-version), without importing it or importlib.metadata (50 ms)."""
    spec = find_spec("mcp")
    if spec is None or spec.origin is None:
        return "no-sdk"
    site = Path(spec.origin).parent.parent
    names = sorted(p.name for pattern in ("mcp-*.dist-info", "mcp_types-*.dist-info") for p in site.glob(pattern))
    return ",".join(names) or f"{spec.origin}:{os.stat(spec.origin).st_mtime_ns}"


def cache_file(config_path: str | os.PathLike[str]) -> Path | None:
    """Where the answers for this config are kept; None when the config cannot be read (the hub reports why)."""
    path = Path(config_path)
    try:
        data = path.read_bytes()
        resolved = str(path.resolve())
    except OSError:
        return None
    key = hashlib.sha256()
    for part in (resolved.encode(), data, __version__.encode(), _sdk_identity().encode()):
        key.update(part)
        key.update(b"\0")
    return cache_dir() / f"{key.hexdigest()[:32]}.json"


@dataclass
class Answers:
    """What a stdio host was last answered: its requested revision, the initialize result, the tools/list result."""

    requested: str
    initialize: dict[str, Any]
    listing: bytes  # the encoded tools/list result, as written to the host

    @classmethod
    def load(cls, path: Path) -> Answers | None:
        """The answers kept at `path`, or None if there are none or the file is not ours (then it is rewritten)."""
        try:
            with path.open("rb") as file:
                header, listing = file.readline(), file.read()
            head = json.loads(header)
        except (OSError, ValueError):
            return None
        if type(head) is not dict or head.get("format") != FORMAT or not listing.strip():
            return None
        requested, initialize = head.get("requested"), head.get("initialize")
        if type(requested) is not str or type(initialize) is not dict:
            return None
        return cls(requested, initialize, listing.rstrip(b"\n"))

    def save(self, path: Path) -> None:
        """Write atomically, readable by the user alone (listings are not secrets, but they are not the world's)."""
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        head = {"format": FORMAT, "requested": self.requested, "initialize": self.initialize}
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(json.dumps(head, separators=(",", ":")).encode() + b"\n" + self.listing + b"\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(path.parent, keep=path)


def _prune(directory: Path, keep: Path) -> None:
    """Drop the oldest files beyond KEEP_FILES: each edit of a servers.yaml makes a new key, and so a new file."""
    with contextlib.suppress(OSError):
        files = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP_FILES:]:
            if old != keep:
                old.unlink()


@dataclass
class Handoff:
    """What the early front leaves to the stdio transport: the host's lines still to be read, in order."""

    lines: list[bytes] = field(default_factory=list)
    pending: bytes = b""  # a partial last line
    initialize: dict[str, Any] | None = None  # the cached initialize result the host was sent, if any
    listing: bytes | None = None  # the cached tools/list result the host was sent, if any


def _response(request_id: Any, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (json.dumps(request_id).encode(), result)


class EarlyFront:
    """A thread that answers the host on fd 0 and 1 until `finish`, and holds every other line.

    With `Answers` (a warm start) it answers initialize and tools/list from them. Without (a first start) it answers
    initialize as the hub's SDK server does, and tools/list from the children once a `Probe` (hub/first_start.py)
    attached to it has every child's tools; until `release_probe` it also drives that probe's pipes.
    """

    def __init__(self, answers: Answers | None) -> None:
        self._answers = answers
        self._initialize = json.dumps(answers.initialize, separators=(",", ":")).encode() if answers else b""
        self._handoff = Handoff()
        self._stop_read, self._stop_write = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="hub-warm-start", daemon=True)
        self._probe: Probe | None = None
        self._attached: Probe | None = None  # handed over by `attach`, taken by the thread
        self._released = threading.Event()
        self._deferred: list[tuple[Any, bytes]] = []  # tools/list requests waiting for the probe: (id, line held)

    @classmethod
    def start(cls, answers: Answers | None) -> EarlyFront:
        front = cls(answers)
        front._thread.start()
        return front

    @property
    def cached(self) -> bool:
        """Whether it answers from the last run's cache (a warm start), not as a first start."""
        return self._answers is not None

    def attach(self, probe: Probe) -> None:
        """Let the thread drive `probe` (a first start), and answer tools/list from it when it is complete."""
        self._attached = probe
        self._signal(b"a")

    def release_probe(self) -> None:
        """Stop driving the probe, so that the children's connections can take their pipes over."""
        probe = self._attached
        if probe is None:
            return
        if self._thread.is_alive():
            self._released.clear()
            self._signal(b"r")
            if not self._released.wait(STOP_LIMIT) and self._thread.is_alive():
                raise BrokenPipeError("the host stopped reading while the hub was starting")
        self._attached = None
        probe.release()

    def finish(self) -> Handoff:
        """Stop answering and return what the host sent that is not answered yet; fd 0 and 1 are free after it."""
        self.release_probe()
        self._signal(b"x")
        self._thread.join(STOP_LIMIT)
        for fd in (self._stop_read, self._stop_write):
            os.close(fd)
        if self._thread.is_alive():  # blocked writing to a host that stopped reading: the wire is lost
            raise BrokenPipeError("the host stopped reading while the hub was starting")
        return self._handoff

    def _signal(self, what: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stop_write, what)

    def _serve(self) -> None:
        handoff, pending = self._handoff, b""
        try:
            while True:
                probe = self._probe
                watched = [0, self._stop_read, *(probe.fds() if probe is not None else ())]
                readable, _, _ = select.select(watched, [], [])
                if self._stop_read in readable:
                    signals = os.read(self._stop_read, 64)
                    if b"a" in signals:
                        self._probe = self._attached
                    if b"r" in signals:
                        self._probe = None
                        self._released.set()
                    if b"x" in signals:
                        break
                if probe is not None and probe is self._probe:
                    for fd in readable:
                        if fd not in (0, self._stop_read):
                            probe.readable(fd)
                if self._deferred:
                    self._answer_deferred()
                if 0 not in readable:
                    continue
                try:
                    chunk = os.read(0, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    break  # end of input: the stdio transport reads it again and ends the session
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self._take(line)
        except OSError:
            pass  # the host went away; the stdio transport finds out by itself
        finally:
            handoff.pending = pending
            self._released.set()  # the probe is not driven any more

    def _take(self, line: bytes) -> None:
        handoff = self._handoff
        if not line.strip():
            return  # the stdio transport skips blank lines too
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if type(message) is not dict or type(message.get("id")) not in _ID_TYPES:
            handoff.lines.append(line)
            return
        method, params, request_id = message.get("method"), message.get("params"), message["id"]
        if method == "initialize" and not handoff.lines and handoff.initialize is None:
            requested = params.get("protocolVersion") if type(params) is dict else None
            answers = self._answers
            if answers is not None and requested == answers.requested:
                self._write(_response(request_id, self._initialize))
                handoff.initialize = answers.initialize
            elif answers is None and requested in HANDSHAKE_VERSIONS:
                handoff.initialize = initialize_result(requested)
                self._write(_response(request_id, json.dumps(handoff.initialize, separators=(",", ":")).encode()))
            else:
                handoff.lines.append(line)
                return
            # The SDK session still has to see it, to know the host: under our id, its answer is dropped.
            handoff.lines.append(json.dumps({**message, "id": REPLAY_ID}).encode())
            return
        if handoff.initialize is not None:
            if method == "tools/list" and (params is None or (type(params) is dict and params.get("cursor") is None)):
                if self._answers is not None:
                    self._write(_response(request_id, self._answers.listing))
                    handoff.listing = self._answers.listing
                    return
                # A first start: the host asked for a handshake revision, and the SDK shapes a listing alike for all
                # of them (tests/integration/test_first_start.py holds it).
                handoff.lines.append(line)  # answered here if the probe completes first, else by the SDK
                self._deferred.append((request_id, line))
                self._answer_deferred()
                return
            if method == "ping":
                self._write(_response(request_id, b"{}"))
                return
        handoff.lines.append(line)

    def _answer_deferred(self) -> None:
        """Answer the tools/list requests held for the probe, once it has every child's tools."""
        probe = self._probe
        listing = probe.listing() if probe is not None else None
        if listing is None:
            return
        handoff = self._handoff
        for request_id, line in self._deferred:
            handoff.lines.remove(line)
            self._write(_response(request_id, listing))
        handoff.listing = listing
        self._deferred = []

    @staticmethod
    def _write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


class WarmStart:
    """Keeps the cache file for one config: records what the stdio host is answered, and checks a replay."""

    def __init__(self, path: Path | None, answers: Answers | None = None) -> None:
        self.path = path
        self.kept = answers  # what the file holds now
        self._initialize: tuple[Any, str] | None = None  # (request id, requested revision) awaiting its answer
        self._answered: tuple[str, dict[str, Any]] | None = None  # (requested revision, result) of this session
        self.sent: dict[str, Any] | None = None  # the cached initialize result the host was sent, if any
        self.mismatch: dict[str, Any] | None = None  # the SDK's answer to the replay, when it differed
        self.on_answered: Callable[[], None] | None = None  # called once the SDK has answered an initialize

    @classmethod
    def for_config(cls, config_path: str | os.PathLike[str]) -> WarmStart:
        path = cache_file(config_path)
        return cls(path, Answers.load(path) if path is not None else None)

    def saw_initialize(self, message: dict[str, Any]) -> None:
        """The reader met an initialize request; its answer is watched for by `answer`."""
        params = message.get("params")
        requested = params.get("protocolVersion") if type(params) is dict else None
        self._initialize = (message.get("id"), requested) if type(requested) is str else None

    def answer(self, request_id: Any, result: Any) -> bool:
        """The writer is about to send an answer; True if it must be dropped (the answer to a replay)."""
        watched = self._initialize
        if watched is None or request_id != watched[0]:
            return False
        self._initialize = None
        if type(result) is dict:
            result = json.loads(json.dumps(result))  # compared and kept as the host would read it
            self._answered = (watched[1], result)
            if self.on_answered is not None:
                self.on_answered()
            sent = self.sent or {}
            if request_id == REPLAY_ID and result != sent:
                self.mismatch = result
                import structlog  # loaded long before a replay is answered

                structlog.get_logger("hub").warning(
                    "warm_start_mismatch",
                    detail="the host was sent an initialize result the hub no longer gives; the cache is rewritten",
                    differs=sorted(key for key in {*result, *sent} if result.get(key) != sent.get(key)),
                )
        return bool(request_id == REPLAY_ID)

    def answered_version(self) -> str | None:
        """The protocol revision of the host's initialize, once the SDK session has answered it."""
        version = self._answered[1].get("protocolVersion") if self._answered is not None else None
        return version if type(version) is str else None

    def listing(self, version: str, listing: bytes) -> None:
        """The complete tools/list the host was answered (every child settled); kept if it goes with initialize."""
        answered = self._answered
        if self.path is None or answered is None or answered[1].get("protocolVersion") != version:
            return
        kept = self.kept
        if kept and (kept.requested, kept.initialize, kept.listing) == (answered[0], answered[1], listing):
            return
        answers = Answers(answered[0], answered[1], listing)
        try:
            answers.save(self.path)
        except OSError:
            return  # a read-only home: the next start is a cold one, nothing else changes
        self.kept = answers

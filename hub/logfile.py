"""The hub's log file on disk: appended one whole line at a time, rotated by size, reopened on SIGHUP; and read
back across its rotations (`hub logs`).

Rotation renames `hub.log` to `hub.log.1` (and `hub.log.1` to `hub.log.2`, ...), as logrotate and Python's
`RotatingFileHandler` name them; the rule of the names is here once, for the writer and the reader.

A line is never split across two files nor written twice, and goes out in one `write` of an unbuffered append-mode
descriptor, so a reader sees whole lines only. Writers hand over text in pieces (structlog prints a message, then
its newline), so each thread's text is kept until its newline: two threads writing at once interleave whole lines.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# What rotation appends to the file's name: `.1` (the newest rotated file) to `.N` (the oldest kept).
_SIBLING = re.compile(r"\.([1-9][0-9]*)$")
# How many times the rotated files are listed, while the hub rotates, to get one list that two listings agree on.
_SNAPSHOT_ATTEMPTS = 5


def rotated_siblings(path: Path) -> list[Path]:
    """The rotated files of `path` that exist, oldest first (`hub.log.5` ... `hub.log.1`); `path` is not included."""
    return [p for _, p in _numbered_siblings(path)]


def _numbered_siblings(path: Path) -> list[tuple[int, Path]]:
    found: list[tuple[int, Path]] = []
    try:
        candidates = list(path.parent.glob(f"{glob.escape(path.name)}.*"))
    except OSError:
        return []
    for candidate in candidates:
        match = _SIBLING.fullmatch(candidate.name[len(path.name) :])
        if match and candidate.is_file():
            found.append((int(match.group(1)), candidate))
    return sorted(found, reverse=True)


class LogFile:
    """A text stream for structlog, stdlib logging and the call log, appending whole lines to `path`; thread-safe.

    `max_bytes` 0 never rotates (logrotate does, then sends SIGHUP: `reopen`). Otherwise a line that would take the
    file past `max_bytes` goes to a fresh file (a longer line is written whole, alone); `backups` (at least 1) kept.
    With `tee` (stderr), every text is passed on to it too: the desktop's default call log, while the host that
    started the hub still reads its stderr.
    """

    def __init__(self, path: str | Path, max_bytes: int = 0, backups: int = 1, tee: IO[str] | None = None) -> None:
        self.path = Path(path)
        self._tee = tee
        self.max_bytes = max_bytes
        self.backups = max(1, backups)
        self._limit = max_bytes  # the size past which the next line rotates: max_bytes, later after a failure
        self._lock = threading.Lock()
        self._pending: dict[int, str] = {}  # per thread: text written since its last newline
        self.path.parent.mkdir(parents=True, exist_ok=True)  # hub.log_file: ~/.local/state/hub/hub.log
        self._open()

    def _open(self) -> None:
        self._file: IO[bytes] = open(self.path, "ab", buffering=0)  # noqa: SIM115 - held until close or reopen
        self._size = os.fstat(self._file.fileno()).st_size

    def write(self, text: str) -> int:
        """Take `text`; every line it completes is written, the rest waits for its newline."""
        with self._lock:
            me = threading.get_ident()
            pending = self._pending.pop(me, "") + text
            end = pending.rfind("\n") + 1
            if end < len(pending):
                self._pending[me] = pending[end:]
            if end:
                self._write_lines(pending[:end].encode("utf-8", "backslashreplace"))
        if self._tee is not None:
            try:
                self._tee.write(text)
                self._tee.flush()
            except (OSError, ValueError):  # the host closed its end of stderr: the file still has every line
                pass
        return len(text)

    def _write_lines(self, data: bytes) -> None:
        if self.max_bytes and self._size and self._size + len(data) > self._limit:
            self._rotate()
        self._file.write(data)
        self._size += len(data)

    def _rotate(self) -> None:
        self._file.close()
        try:
            for n, older in _numbered_siblings(self.path):  # the oldest first, so that no name is taken yet
                if n >= self.backups:
                    os.remove(older)
                else:
                    os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
            if self.path.exists():  # else it was deleted: the new file is all there is to begin
                os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
            self._limit = self.max_bytes
        except OSError as exc:
            # Go on in the same file rather than lose lines, and try again after another max_bytes (on Windows, a
            # file another process holds open cannot be renamed). Said on stderr: never stdout, the protocol's.
            self._limit = self._size + self.max_bytes
            print(f"hub: cannot rotate {self.path} ({exc}); trying again later", file=sys.stderr)
        self._open()

    def reopen(self) -> None:
        """Close the file and open `path` again: after logrotate (or a person) moved it away, a new file is begun."""
        with self._lock:
            self._file.close()
            self._open()

    def flush(self) -> None:
        """Nothing to do: every whole line is written at once, and a part of a line waits for its end."""

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        """Write what waits for a newline (ended with one), then close."""
        with self._lock:
            rest = "".join(text + "\n" for text in self._pending.values())
            self._pending.clear()
            if rest:
                self._write_lines(rest.encode("utf-8", "backslashreplace"))
            self._file.close()


def read_lines(handle: IO[bytes]) -> Iterator[str]:
    """The lines of an open log file, decoded (a byte that is not UTF-8 replaced, never fatal)."""
    for raw in handle:
        yield raw.decode("utf-8", "replace").rstrip("\r\n")


def file_identity(file: IO[bytes] | Path) -> tuple[int, int] | None:
    """What tells one file from another whatever its name: device and inode; None when no file is at the path."""
    try:
        info = os.stat(file if isinstance(file, Path) else file.fileno())
    except OSError:
        return None
    return info.st_dev, info.st_ino


class Follower:
    """The lines appended to a log file, as they come (`hub logs --follow`). Only whole lines are given.

    It follows the file across rotation: when another file is at the path (another inode), the rest of the old one
    is read, then every file rotated after it (several rotations may happen between two polls: a burst of calls
    with a small `max_bytes`), then the new one from its start; each line once. Also: a file that is not there yet,
    and truncation in place (logrotate's copytruncate).
    """

    def __init__(self, path: Path, *, from_end: bool) -> None:
        self.path = path
        self.identity: tuple[int, int] | None = None
        self._file: IO[bytes] | None = None
        self._rest = b""
        self._drop_first = False  # the first line read is the end of one begun before the start: not a line
        if self._open() and from_end:
            assert self._file is not None
            end = self._file.seek(0, os.SEEK_END)
            if end:
                self._file.seek(end - 1)
                self._drop_first = self._file.read(1) != b"\n"

    def _open(self) -> bool:
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 - held across polls; closed on rotation and in close()
        except FileNotFoundError:
            return False
        self.identity = file_identity(self._file)
        self._rest = b""
        self._drop_first = False
        return True

    def poll(self) -> list[str]:
        """Every whole line appended since the last poll, in the order it was written."""
        if self._file is None and not self._open():
            return []
        assert self._file is not None
        lines = self._read()
        try:
            now = os.stat(self.path)
        except OSError:
            return lines  # moved away and the new file not made yet: the old one is read until it is
        if (now.st_dev, now.st_ino) != self.identity:
            lines += self._read()  # what was written to the old file after the read above, before the rename
            if self._rest and not self._drop_first:
                lines.append(self._rest.decode("utf-8", "replace"))
            old, old_written = self.identity, os.fstat(self._file.fileno()).st_mtime_ns
            self.close()
            opened = self._open()  # first: a file rotated while the others are read is then one of them
            lines += _rotated_after(self.path, old, old_written, self.identity if opened else None)
            if opened:
                lines += self._read()
        elif now.st_size < self._file.tell():  # truncated in place: what is there now is new
            self._file.seek(0)
            self._rest = b""
        return lines

    def _read(self) -> list[str]:
        assert self._file is not None
        data = self._file.read()
        if not data:
            return []
        *complete, self._rest = (self._rest + data).split(b"\n")
        if complete and self._drop_first:
            complete.pop(0)
            self._drop_first = False
        return [line.decode("utf-8", "replace").rstrip("\r") for line in complete]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _rotated_after(
    path: Path, old: tuple[int, int] | None, old_written: int, current: tuple[int, int] | None
) -> list[str]:
    """The lines of the rotated files newer than `old` (the file followed until now), oldest first, but `current`.

    `old` is found among them by its inode; if it is gone (deleted past `backups`, or moved under another name),
    the files written after it was last written are the newer ones.
    """
    with opened_siblings(path) as handles:
        identities = [file_identity(h) for h in handles]
        if old in identities:
            newer = handles[identities.index(old) + 1 :]
        else:
            newer = [h for h in handles if os.fstat(h.fileno()).st_mtime_ns > old_written]
        return [line for h in newer if file_identity(h) != current for line in read_lines(h)]


@contextlib.contextmanager
def opened_siblings(path: Path) -> Iterator[list[IO[bytes]]]:
    """The rotated files of `path`, open, oldest first. Rotation moves the names while they are opened: they are
    opened, then listed again, until the names and the open files agree."""
    handles: list[IO[bytes]] = []
    try:
        for _attempt in range(_SNAPSHOT_ATTEMPTS):
            for handle in handles:
                handle.close()
            handles = []
            for sibling in rotated_siblings(path):
                with contextlib.suppress(OSError):
                    handles.append(open(sibling, "rb"))  # noqa: SIM115 - closed in the finally below
            if [file_identity(p) for p in rotated_siblings(path)] == [file_identity(h) for h in handles]:
                break
        yield handles
    finally:
        for handle in handles:
            handle.close()

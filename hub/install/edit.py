"""Changing a host's config file safely: atomic writes that keep the file's mode, timestamped backups
(`<name>.bak-<YYYYmmddTHHMMSS>`, `-2` ... within one second), and the servers' mapping of a JSON (with comments) or
TOML file edited entry by entry. A change that changes nothing writes nothing and backs nothing up. Text is read and
written as UTF-8 bytes without newline translation, so Windows line ends stay.
"""

from __future__ import annotations

import difflib
import glob
import itertools
import re
import shutil
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import Any

from hub.install import jsonc
from hub.platform.files import replace_file

BACKUP_MARK = ".bak-"
_STAMP = re.compile(r"\.bak-(\d{8}T\d{6})(?:-(\d+))?$")


class EditError(Exception):
    """A config file that cannot be read, parsed or changed as asked; phrased for the person running the command."""


def read_text(path: Path) -> str | None:
    """The file's text (None if it does not exist).

    Raises:
        EditError: it cannot be read or is not UTF-8.
    """
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise EditError(f"{path}: not UTF-8 text; left as it is") from None
    except OSError as exc:
        raise EditError(f"{path}: cannot read it: {exc.strerror}") from None


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` in one step (`hub.platform.files.replace_file`), creating its directory.

    `mode`: the new file's permission bits; default: the old file's, else what the umask gives.

    Raises:
        EditError: the directory or file cannot be written.
    """
    try:
        replace_file(path, data.encode("utf-8") if isinstance(data, str) else data, mode)
    except OSError as exc:
        raise EditError(f"{path}: cannot write it: {exc.strerror}") from None


def backup(path: Path, now: datetime) -> Path | None:
    """A copy of `path` as `<name>.bak-<stamp>` beside it (None when there is no file to keep).

    Raises:
        EditError: the copy cannot be made.
    """
    if not path.exists():
        return None
    stem = f"{path.name}{BACKUP_MARK}{now.strftime('%Y%m%dT%H%M%S')}"
    names = itertools.chain([stem], (f"{stem}-{number}" for number in itertools.count(2)))
    target = next(path.with_name(name) for name in names if not path.with_name(name).exists())
    try:
        shutil.copy2(path, target)
    except OSError as exc:
        raise EditError(f"{path}: cannot back it up to {target}: {exc.strerror}") from None
    return target


def backups(path: Path) -> list[Path]:
    """The backups of `path`, oldest first."""
    found = []
    for candidate in path.parent.glob(f"{glob.escape(path.name)}{BACKUP_MARK}*"):
        match = _STAMP.search(candidate.name[len(path.name) :])
        if match and candidate.name[: len(path.name)] == path.name:
            found.append((match.group(1), int(match.group(2) or 1), candidate))
    return [p for _, _, p in sorted(found)]


def unified_diff(path: Path, before: str | None, after: str) -> str:
    """What a change does to `path`, as a unified diff (empty when nothing changes)."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=str(path) if before is not None else "/dev/null",
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


class ServersDoc(ABC):
    """A config file's text and the mapping of MCP servers in it, changed one entry at a time."""

    def __init__(self, text: str | None, key: tuple[str, ...]) -> None:
        self.text = text or ""
        self.key = key

    @abstractmethod
    def entries(self) -> dict[str, dict[str, Any]]:
        """The servers in the file: name -> entry (as the format's parser reads it)."""

    @abstractmethod
    def _set(self, path: tuple[str, ...], value: Any) -> None: ...

    @abstractmethod
    def remove_entry(self, name: str) -> None:
        """Take out the entry `name` and nothing else (nothing happens if it is absent)."""

    def set_entry(self, name: str, entry: dict[str, Any]) -> None:
        """Make the entry `name` hold `entry`'s keys: the whole entry when it is new, else only the keys that differ
        (keys of the entry that `entry` does not name, an `env` someone added, stay)."""
        current = self.entries().get(name)
        if current is None:
            self._set((name,), entry)
            return
        for key, value in entry.items():
            if current.get(key) != value:
                self._set((name, key), value)


class JsonServers(ServersDoc):
    """JSON or JSON with comments: edits change only the text of the entry (hub.install.jsonc)."""

    def entries(self) -> dict[str, dict[str, Any]]:
        try:
            data = jsonc.loads(self.text)
        except jsonc.JsoncError as exc:
            raise EditError(f"not valid JSON: {exc}") from None
        for key in self.key:
            data = data.get(key) if isinstance(data, dict) else None
        if not isinstance(data, dict):
            return {}
        return {name: entry for name, entry in data.items() if isinstance(entry, dict)}

    def _set(self, path: tuple[str, ...], value: Any) -> None:
        try:
            self.text = jsonc.set_value(self.text, (*self.key, *path), value)
        except jsonc.JsoncError as exc:
            raise EditError(f"cannot change it: {exc}") from None

    def remove_entry(self, name: str) -> None:
        try:
            self.text = jsonc.remove_member(self.text, (*self.key, name))
        except jsonc.JsoncError as exc:
            raise EditError(f"not valid JSON: {exc}") from None


class TomlServers(ServersDoc):
    """TOML (Codex): `[mcp_servers.NAME]` tables, edited with tomlkit, which keeps comments and layout."""

    def _document(self) -> Any:
        import tomlkit
        from tomlkit.exceptions import ParseError

        try:
            return tomlkit.parse(self.text)
        except ParseError as exc:
            raise EditError(f"not valid TOML: {exc}") from None

    def _servers(self, document: Any) -> Any:
        """The servers' table (an inline one too), None if the file has none.

        Raises:
            EditError: the key holds something other than a table.
        """
        servers = document.get(self.key[0])
        if servers is not None and not isinstance(servers, dict):
            raise EditError(f"'{self.key[0]}' is not a table; left as it is")
        return servers

    def entries(self) -> dict[str, dict[str, Any]]:
        servers = self._servers(self._document())
        if servers is None:
            return {}
        return {name: entry for name, entry in servers.unwrap().items() if isinstance(entry, dict)}

    def _set(self, path: tuple[str, ...], value: Any) -> None:
        import tomlkit

        document = self._document()
        servers = self._servers(document)
        if servers is None:
            servers = document[self.key[0]] = tomlkit.table(is_super_table=True)
        if len(path) == 1:
            table = tomlkit.item(value)
            table.add(tomlkit.nl())  # a blank line before whatever table follows it
            servers[path[0]] = table
        else:
            servers[path[0]][path[1]] = value
        self._store(document.as_string())

    def remove_entry(self, name: str) -> None:
        document = self._document()
        servers = self._servers(document)
        if servers is None or name not in servers:
            return
        del servers[name]
        if not servers and getattr(servers, "is_super_table", lambda: False)():
            del document[self.key[0]]  # `[mcp_servers.NAME]` made it; with no NAME left it has no text of its own
        self._store(document.as_string())

    def _store(self, text: str) -> None:
        """Keep the file's ending: tomlkit separates an appended table with blank lines that, at the end of the
        file, would change the bytes an uninstall gives back."""
        if not text.strip():
            self.text = ""
        elif not self.text.strip():
            self.text = text.rstrip("\n") + "\n"
        else:
            self.text = text.rstrip("\n") + ("\n" if self.text.endswith("\n") else "")


def open_servers(text: str | None, key: tuple[str, ...], toml: bool) -> ServersDoc:
    """The servers' mapping at `key` in a file's text, in that file's format."""
    return TomlServers(text, key) if toml else JsonServers(text, key)

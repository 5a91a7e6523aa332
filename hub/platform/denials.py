"""A sandboxed child's error text read as what the sandbox denied it, or not (docs/sandbox.md, "Seeing a denial":
which texts are a network, write or read denial, and which are not).

A sandbox reports nothing itself: a denial reaches the hub only as the child's own error, a line on its stderr or an
error answer. A text with none of the error words costs one regular-expression search.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from hub.platform.sandbox import Exposure, hidden, unwritable

# The most of one text that is read (an error answer can be long; its error is near its start).
TEXT_LIMIT = 4000

# Each error, by what Python, Node and the C library call it; the network ones first (a refused connection's text
# may also name a file).
_NETWORK = {
    "ECONNREFUSED": r"ECONNREFUSED|\[Errno 111\]|Connection refused",
    "ENETUNREACH": r"ENETUNREACH|\[Errno 101\]|Network is unreachable",
    "EHOSTUNREACH": r"EHOSTUNREACH|\[Errno 113\]|No route to host",
    "EAI_AGAIN": r"EAI_AGAIN|ENOTFOUND|\[Errno -[23]\]|Temporary failure in name resolution|Name or service not known",
}
_FILES = {
    "EROFS": r"EROFS|\[Errno 30\]|Read-only file system",
    "EACCES": r"EACCES|\[Errno 13\]|Permission denied",
    "EPERM": r"EPERM|\[Errno 1\]|Operation not permitted",
    "ENOENT": r"ENOENT|\[Errno 2\]|No such file or directory|does not exist",
}
_ERRORS = [(code, re.compile(pattern, re.IGNORECASE)) for code, pattern in (*_NETWORK.items(), *_FILES.items())]
_ANY = re.compile("|".join(f"(?:{p})" for p in (*_NETWORK.values(), *_FILES.values())), re.IGNORECASE)

# An absolute path, quoted (Python's and Node's errors quote theirs) or bare (ending before spaces and punctuation).
_QUOTED = re.compile(r"""['"`](/[^'"`\n]*)['"`]""")
_BARE = re.compile(r"""(?<![\w.:/~-])(/[^\s'"`,;:()\[\]]+)""")
# Words of a text that say its failure was a change, not a read (paths are removed first: a file may be named so).
_WRITES = re.compile(
    r"\b(?:write|writing|wrote|writable|creat\w*|mkdir|rename|unlink|rmdir|remov\w*|delet\w*|sav\w*|append\w*|"
    r"cop\w*|mov\w*|touch|chmod|chown|symlink|truncat\w*|edit\w*)\b",
    re.IGNORECASE,
)
# An address: a URL's host[:port] (never its user or password), a host:port, or the name a lookup failed on.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^\s/@]*@)?([^\s/'\"?#,]+)", re.IGNORECASE)
_HOST_PORT = re.compile(
    r"(?<![\w.:/-])(\[[0-9a-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3}|localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):(\d{1,5})\b",
    re.IGNORECASE,
)
_LOOKUP = re.compile(r"(?:EAI_AGAIN|ENOTFOUND|getaddrinfo \w+)\s+([a-z0-9.-]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Denial:
    """What a sandbox denied a child: `kind` read, write or network; `target` the path or the address (None when
    the text names no address); `error` the error's name (ENOENT, EROFS, EACCES, EPERM, ECONNREFUSED, ...)."""

    kind: str
    target: str | None
    error: str


def denial(text: str, exposure: Exposure) -> Denial | None:
    """The denial `text` (a sandboxed child's error) reports, judged against what its sandbox shows; None: none."""
    text = text[:TEXT_LIMIT]
    if _ANY.search(text) is None:
        return None
    error = next(code for code, pattern in _ERRORS if pattern.search(text))
    if error in _NETWORK:
        return None if exposure.network else Denial("network", address(text), error)
    paths = _paths(text)
    if not paths:
        if error in ("EACCES", "EPERM") and not exposure.network and (found := address(text)) is not None:
            return Denial("network", found, error)  # sandbox-exec refuses a connection with EPERM
        return None
    rest = text
    for path in paths:
        rest = rest.replace(path, " ")
    kind = "write" if error == "EROFS" or _WRITES.search(rest) else "read"
    for path in paths:
        if _denied(path, kind, error, exposure):
            return Denial(kind, path, error)
    return None


def _denied(path: str, kind: str, error: str, exposure: Exposure) -> bool:
    if error == "ENOENT":  # a write creates its file: the directory it goes in is what was hidden
        return hidden(path, exposure) or (kind == "write" and hidden(os.path.dirname(path), exposure))
    if kind == "write":
        return unwritable(path, exposure)
    return hidden(path, exposure)


def _paths(text: str) -> list[str]:
    """The absolute paths `text` names, quoted ones first, each once."""
    found = [m.group(1) for m in _QUOTED.finditer(text)]
    found += [m.group(1).rstrip(".") for m in _BARE.finditer(_QUOTED.sub(" ", text))]
    return [os.path.normpath(p) for p in dict.fromkeys(found) if p != "/"]


def address(text: str) -> str | None:
    """The address a network error names: a URL's host and port, a host:port, or the name a lookup failed on."""
    for pattern in (_URL, _HOST_PORT, _LOOKUP):
        found = pattern.search(text)
        if found is not None:
            return found.group(0) if pattern is _HOST_PORT else found.group(1)
    return None

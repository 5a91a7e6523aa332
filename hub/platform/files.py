"""Files the hub rewrites while others may read them (the lock, the token file, config files it edits)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` in one step: a temporary file in the same directory, flushed to disk, then
    `os.replace`. A reader (a running hub, an editor) sees the old file or the new one, never half of one, and a
    failure leaves the old file and no temporary behind. Creates the directory when missing.

    `mode`: the new file's permission bits; default: the old file's, else what the umask gives a new file.

    Raises:
        OSError: the directory or the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_umask()
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current

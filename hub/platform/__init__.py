"""Where the hub meets the operating system (`pipes`, `processes`, `watchdog`, `linux`), each with a fast path and
a portable one; and a child's sandbox (`sandbox`) and what its errors say it was denied (`denials`).

The portable path is chosen where the fast one does not exist (Windows) and wherever `HUB_PORTABLE=1` is set, so
that it is tested on Linux too (docs/platforms.md). Nothing Linux- or POSIX-only (fcntl, /proc, pidfd, process
groups, signals Windows lacks) is imported at module level, here or anywhere in the hub, nor used on the portable
path.
"""

from __future__ import annotations

import os
import subprocess
import sys

LINUX = sys.platform.startswith("linux")
WINDOWS = os.name == "nt"
# How the hub starts a process on Windows: in a process group of its own (a Ctrl-C to the hub's console is the hub's)
# and without a console window of its own (getattr: the names exist only there).
WINDOWS_CREATION_FLAGS: int = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x00000200) | getattr(
    subprocess, "CREATE_NO_WINDOW", 0x08000000
)


def portable() -> bool:
    """Whether to use the portable path of every concern (no fast path here, or forced by HUB_PORTABLE=1)."""
    return os.name != "posix" or os.environ.get("HUB_PORTABLE") == "1"

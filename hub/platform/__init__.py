"""Where the hub meets the operating system, one module per concern, each with a fast path and a portable one.

- `pipes`: reading and writing a pipe without blocking the event loop (POSIX: the loop watches the descriptor;
  portable: anyio streams, or a worker thread for the hub's own stdin and stdout).
- `processes`: starting a child, watching it exit, and stopping it with its descendants (Linux: a pidfd says
  when it exits; POSIX: process groups; portable: psutil's process tree).
- `watchdog`: the hub's side of `hub.reaper`, which ends the children of a hub that was killed.

The portable path is chosen where the fast one does not exist (Windows) and wherever `HUB_PORTABLE=1` is set, so
that it is tested on Linux too. Nothing Linux- or POSIX-only is imported at module level outside these modules.
"""

from __future__ import annotations

import os
import sys

LINUX = sys.platform.startswith("linux")
WINDOWS = os.name == "nt"


def portable() -> bool:
    """Whether to use the portable path of every concern (no fast path here, or forced by HUB_PORTABLE=1)."""
    return os.name != "posix" or os.environ.get("HUB_PORTABLE") == "1"

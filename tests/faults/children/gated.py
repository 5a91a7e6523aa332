"""Run another child module once a gate file exists: a server that starts only when the test says so.

    python -m tests.faults.children.gated GATE MODULE [ARG ...]

It reads nothing from stdin meanwhile, so whatever the hub sends waits in the pipe. It gives up after 60 s.
"""

from __future__ import annotations

import os
import runpy
import sys
import time

LIMIT = 60.0


def main() -> None:
    gate, module, *args = sys.argv[1:]
    deadline = time.monotonic() + LIMIT
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            sys.exit(f"gated: {gate} never appeared")
        time.sleep(0.02)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

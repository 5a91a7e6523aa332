"""A child that appends "PID TIME" (wall clock, seconds) to the file named by --start-file at its very first
line, before it imports the SDK: one line per process started. Tools: echo, pid. With --stuck (or --stuck-if PATH
while PATH exists) it then sleeps for 300 s instead, reading nothing: a start-up that hangs, which only a signal
ends (not the end of its stdin)."""

from __future__ import annotations

import os
import sys
import time


def _note_start() -> None:
    path = sys.argv[sys.argv.index("--start-file") + 1]
    with open(path, "a") as f:
        f.write(f"{os.getpid()} {time.time()}\n")
    gate = sys.argv[sys.argv.index("--stuck-if") + 1] if "--stuck-if" in sys.argv else None
    if "--stuck" in sys.argv or (gate is not None and os.path.exists(gate)):
        time.sleep(300)


_note_start()

from tests.faults.children._base import FaultServer, parser, serve  # noqa: E402 - after the note, on purpose


def main() -> None:
    p = parser(__doc__ or "", "note_start")
    p.add_argument("--start-file", required=True)
    p.add_argument("--stuck", action="store_true")
    p.add_argument("--stuck-if")
    args = p.parse_args()
    serve(FaultServer(args.name), args)


if __name__ == "__main__":
    main()

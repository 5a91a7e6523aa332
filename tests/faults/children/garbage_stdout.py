"""A child that prints non-JSON lines on stdout: a banner before serving and two lines before every answer.

Tools: echo, pid. The SDK's stdio_server diverts fd 1 to stderr while it serves (and writes the wire through a
private duplicate), so the garbage goes through our own duplicate of the original stdout, taken before serving;
each write is one small os.write (atomic on a pipe) between whole messages (the SDK flushes each one).
"""

from __future__ import annotations

import os

from tests.faults.children._base import FaultServer, parser, serve

BANNER = b"Starting garbage_stdout v1.0 ... listening on stdio\n"
NOISE = b"DEBUG: handling a call {not json\nprogress: 50% [=====     ]\n"


def main() -> None:
    args = parser(__doc__ or "", "garbage_stdout").parse_args()
    fault = FaultServer(args.name)
    wire = os.dup(1)

    def noise(name: str) -> None:
        os.write(wire, NOISE)

    fault.before_call = noise
    os.write(wire, BANNER)
    serve(fault, args)


if __name__ == "__main__":
    main()

"""A child that flaps: each process answers --every - 1 tool calls (default 3), then exits with code 5 in the
middle of the next one, after a line on stderr. Tools: echo, pid."""

from __future__ import annotations

import os

from tests.faults.children._base import FaultServer, parser, say, serve


def main() -> None:
    p = parser(__doc__ or "", "flaps")
    p.add_argument("--every", type=int, default=3)
    args = p.parse_args()
    fault = FaultServer(args.name)
    calls = 0

    def count(name: str) -> None:
        nonlocal calls
        calls += 1
        if calls >= args.every:
            say(f"flaps: going down on call {calls}")
            os._exit(5)

    fault.before_call = count
    serve(fault, args)


if __name__ == "__main__":
    main()

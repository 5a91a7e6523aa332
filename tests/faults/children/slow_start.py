"""A child that takes long to start: it reads nothing from stdin for --delay seconds (default 20), or until
--gate PATH exists when given. Then it serves echo and pid."""

from __future__ import annotations

import os
import time

from tests.faults.children._base import FaultServer, parser, say, serve


def main() -> None:
    p = parser(__doc__ or "", "slow_start")
    p.add_argument("--delay", type=float, default=20.0)
    p.add_argument("--gate", default=None, help="start once this file exists (instead of after --delay)")
    args = p.parse_args()
    say(f"slow_start: warming up ({'until ' + args.gate if args.gate else f'{args.delay:g}s'})")
    if args.gate:
        while not os.path.exists(args.gate):
            time.sleep(0.05)
    else:
        time.sleep(args.delay)
    serve(FaultServer(args.name), args)


if __name__ == "__main__":
    main()

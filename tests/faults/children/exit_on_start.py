"""A child that dies before answering initialize: one line on stderr, then exit code 3 (or --code)."""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--code", type=int, default=3)
    args = parser.parse_args()
    print("exit_on_start: cannot open /etc/imaginary.conf, giving up", file=sys.stderr, flush=True)
    sys.exit(args.code)


if __name__ == "__main__":
    main()

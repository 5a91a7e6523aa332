"""Sleep, then run a bench child: a server that waits on its backend before it loads anything.

    python -m bench.waits SECONDS MODULE [ARG ...]

`child_raw --start-delay` sleeps after its imports, so 20 of them starting at once still cost 20 interpreters'
imports (~0.12 s of CPU each) on 2 cores before they sleep. The parallel-start row asks whether the hub starts its
children at once or one by one; started through this module, a child costs next to no CPU until its wait is over.
"""

from __future__ import annotations

import runpy
import sys
import time


def main() -> None:
    seconds, module, *args = sys.argv[1:]
    time.sleep(float(seconds))  # what the hub sends meanwhile waits in the pipe
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

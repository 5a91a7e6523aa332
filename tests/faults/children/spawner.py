"""A child with a descendant: at start it spawns `sleep 300` (in its own process group, as most tools do) and,
with --detach, a second `sleep 300` in a new session (escaping the group); it writes "PID GRANDCHILD [DETACHED]"
to --pid-file. Tools: echo, pid."""

from __future__ import annotations

import os
import subprocess

from tests.faults.children._base import FaultServer, parser, say, serve


def main() -> None:
    p = parser(__doc__ or "", "spawner")
    p.add_argument("--pid-file", required=True)
    p.add_argument("--detach", action="store_true")
    args = p.parse_args()
    pids = [os.getpid()]
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    pids.append(subprocess.Popen(["sleep", "300"], **quiet).pid)  # type: ignore[call-overload]
    if args.detach:
        pids.append(subprocess.Popen(["sleep", "300"], start_new_session=True, **quiet).pid)  # type: ignore[call-overload]
    tmp = args.pid_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(" ".join(map(str, pids)))
    os.replace(tmp, args.pid_file)  # atomic: the test never reads half a file
    say(f"spawner: started grandchildren {pids[1:]}")
    serve(FaultServer(args.name), args)


if __name__ == "__main__":
    main()

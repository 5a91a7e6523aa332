"""A child's process: how it is started, how its exit is noticed, and how it is stopped with its descendants.

Environment: only the `BASE_ENV` names of the hub's environment, the names listed in `inherit_env`, and `env` reach
a child; nothing else of the hub's (its secrets stay its own). One more variable, `HUB_INSTANCE`, marks the
children of this hub so that the watchdog can find every one of them, even one the hub had no time to register.

Commands are resolved as the system does (`PATH`, and `PATHEXT` on Windows, so `npx` finds `npx.cmd`); a command
installed next to the hub (in its virtual environment) is found without that directory on `PATH`.

Stopping is bounded: stdin closed, EXIT_GRACE to exit, then the process and its descendants are terminated, and
killed after KILL_GRACE. POSIX runs each child in a process group of its own; elsewhere (and with HUB_PORTABLE=1)
the descendants are found with psutil.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from hub.platform import LINUX, WINDOWS, portable
from hub.platform.pipes import FdReader, FdWriter, StreamReader, StreamWriter, Writer

POSIX_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
WINDOWS_ENV = (
    "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
)  # fmt: skip
BASE_ENV = WINDOWS_ENV if WINDOWS else POSIX_ENV
INSTANCE_VAR = "HUB_INSTANCE"
# Grace period for a child to exit by itself after its stdin closes (the spec's first shutdown step).
EXIT_GRACE = 2.0
# Time between terminating a child (and its descendants) and killing them.
KILL_GRACE = 2.0
# How often an exit is polled where the system cannot tell the event loop (no pidfd), and while stopping.
EXIT_POLL = 0.05
STOP_POLL = 0.01


@dataclass(frozen=True)
class Launch:
    """How a stdio child is started."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]


def launch_of(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    inherit_env: Sequence[str],
    cwd: str | None,
    environ: Mapping[str, str] | None = None,
) -> Launch:
    """The launch of a stdio child with these settings, in the hub's environment (`environ`)."""
    source = os.environ if environ is None else environ
    child_env = {name: source[name] for name in (*BASE_ENV, *inherit_env) if name in source} | dict(env)
    return Launch((resolve_command(command, child_env), *args), cwd, child_env)


def resolve_command(command: str, environ: Mapping[str, str]) -> str:
    """`command` as the system finds it on the child's PATH; else the one installed next to the hub; else as given.

    A desktop host starts `/path/to/.venv/bin/hub` with a PATH of its own, without that venv on it, so servers
    installed into the hub's venv (the default servers.yaml's `mcp-server-time`) would not be found.
    """
    found = shutil.which(command, path=environ.get("PATH", os.defpath))
    if found is not None:
        return command if os.sep in command or not WINDOWS else found  # Windows: the .cmd/.exe shim itself
    if os.sep in command or (WINDOWS and "/" in command):
        return command
    beside = shutil.which(command, path=str(Path(sys.executable).parent))  # the venv's bin (or Scripts)
    return beside if beside is not None else command


class ChildProcess:
    """One running child: its pid, its pipes (attached by `attach`), its exit, and a bounded `stop`."""

    def __init__(self, pid: int, popen: subprocess.Popen[bytes] | None, process: Any) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.exited = anyio.Event()
        self._popen = popen  # the fast path's
        self._process = process  # the portable path's anyio Process
        self._fds: list[int] = []
        self._readers: list[FdReader | StreamReader] = []
        self._stdin: Writer | None = None

    def attach(
        self,
        tg: TaskGroup,
        on_stdout: Callable[[bytes], None],
        on_stderr: Callable[[bytes], None],
        on_end: Callable[[], None],
    ) -> Writer:
        """Start reading stdout and stderr (in `tg` on the portable path); returns the writer of its stdin."""
        if self._popen is not None:
            stdin, stdout, stderr = self._fds
            self._readers = [FdReader(stdout, on_stdout, on_end), FdReader(stderr, on_stderr, _nothing)]
            self._stdin = FdWriter(stdin)
            tg.start_soon(self._watch_exit_fast)
        else:
            process = self._process
            self._readers = [
                StreamReader(process.stdout, on_stdout, on_end, tg),
                StreamReader(process.stderr, on_stderr, _nothing, tg),
            ]
            self._stdin = StreamWriter(process.stdin, tg)
            tg.start_soon(self._watch_exit_polled)
        return self._stdin

    async def _watch_exit_fast(self) -> None:
        popen = self._popen
        assert popen is not None
        if LINUX:
            # A pidfd becomes readable when the process exits: no polling, and an idle hub never wakes for it.
            with suppress(OSError, AttributeError):
                pidfd = os.pidfd_open(self.pid)
                try:
                    await anyio.wait_readable(pidfd)
                finally:
                    os.close(pidfd)
        while (code := popen.poll()) is None:  # noqa: ASYNC110 - the exit itself has no event here
            await anyio.sleep(EXIT_POLL)
        self._exited(code)

    async def _watch_exit_polled(self) -> None:
        while self._process.returncode is None:  # noqa: ASYNC110 - no portable event exists for an exit
            await anyio.sleep(EXIT_POLL)
        self._exited(self._process.returncode)

    def _exited(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            self.exited.set()

    def close_stdin(self) -> None:
        if self._stdin is not None:
            self._stdin.close()
        if self._popen is not None and self._fds and self._fds[0] >= 0:
            with suppress(OSError):
                os.close(self._fds[0])
            self._fds[0] = -1
        elif self._process is not None:
            with suppress(Exception):
                self._process.stdin.close()

    def poll(self) -> int | None:
        """The exit status if the process has exited (it is reaped then), else None."""
        if self.returncode is None:
            code = self._popen.poll() if self._popen is not None else self._process.returncode
            if code is not None:
                self._exited(code)
        return self.returncode

    async def _wait(self, limit_s: float) -> bool:
        """Wait at most `limit_s` for the exit; polled, as the watcher task may be cancelled by now."""
        with anyio.move_on_after(limit_s):
            while self.poll() is None:  # noqa: ASYNC110 - nor here: the watcher may be gone
                await anyio.sleep(STOP_POLL)
        return self.returncode is not None

    async def stop(self) -> None:
        """Close stdin, wait, then terminate and kill the child and its descendants; every wait bounded."""
        with anyio.CancelScope(shield=True):
            self.close_stdin()
            await self._wait(EXIT_GRACE)
            descendants = _descendants(self.pid)
            for sig in (_TERM, _KILL):
                if self.returncode is not None and not descendants:
                    break
                _signal_tree(self.pid, descendants, sig)
                await self._wait(KILL_GRACE)
                descendants = [p for p in descendants if _alive(p)]
            _signal_tree(self.pid, descendants, _KILL)  # what outlived the leader in its group
            self.release()

    def release(self) -> None:
        """Let go of the pipes (after the process has ended)."""
        for reader in self._readers:
            reader.close()
        if self._stdin is not None:
            self._stdin.close()
        for index, fd in enumerate(self._fds):
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)
                self._fds[index] = -1


def _nothing() -> None:
    pass


async def spawn(launch: Launch, instance: str) -> ChildProcess:
    """Start a child, in a process group of its own where there are groups.

    Raises:
        OSError: the command or the working directory does not exist, or cannot be run.
    """
    env = {**launch.env, INSTANCE_VAR: instance}
    if not portable():
        return _spawn_fast(launch, env)
    kwargs: dict[str, Any] = (
        {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if WINDOWS else {"start_new_session": True}  # type: ignore[attr-defined,unused-ignore]
    )
    process = await anyio.open_process(
        list(launch.argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=launch.cwd,
        **kwargs,
    )
    return ChildProcess(process.pid, None, process)


def _spawn_fast(launch: Launch, env: dict[str, str]) -> ChildProcess:
    """POSIX: the child's pipes are the hub's own non-blocking descriptors, watched by the event loop."""
    fds: list[int] = []
    try:
        in_read, in_write = os.pipe()
        fds += [in_read, in_write]
        out_read, out_write = os.pipe()
        fds += [out_read, out_write]
        err_read, err_write = os.pipe()
        fds += [err_read, err_write]
        for fd in (in_write, out_read, err_read):
            os.set_inheritable(fd, False)
        popen = subprocess.Popen(
            launch.argv,
            stdin=in_read,
            stdout=out_write,
            stderr=err_write,
            env=env,
            cwd=launch.cwd,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        for fd in fds:
            with suppress(OSError):
                os.close(fd)
        raise
    for fd in (in_read, out_write, err_write):
        os.close(fd)
    if LINUX:
        from hub.platform.linux import widen_pipe

        widen_pipe(out_read)
    child = ChildProcess(popen.pid, popen, None)
    child._fds = [in_write, out_read, err_read]
    return child


# ---- ending a process tree --------------------------------------------------------------------------------------

_TERM = signal.SIGTERM
_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)


def _descendants(pid: int) -> list[int]:
    """The child's descendants now, including those that left its process group."""
    if LINUX and not portable():
        from hub.platform.linux import descendants

        return descendants(pid)
    import psutil

    with suppress(psutil.Error):
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    return []


def _alive(pid: int) -> bool:
    if LINUX and not portable():
        from hub.platform.linux import alive

        return alive(pid)
    import psutil

    with suppress(psutil.Error):
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    return False


def _signal_tree(pid: int, descendants: list[int], sig: int) -> None:
    if not WINDOWS:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
    for target in (pid, *descendants):
        with suppress(ProcessLookupError, PermissionError, OSError):
            os.kill(target, sig)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"

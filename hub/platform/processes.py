"""A child's process: how it is started, how its exit is noticed, and how it is stopped with its descendants.

A child's environment holds only the `BASE_ENV` names of the hub's, the names in `inherit_env`, and `env` (the hub's
secrets stay its own), plus `HUB_INSTANCE`, by which the watchdog finds even a child the hub had no time to register.
A stop is bounded, and notes the descendants before stdin closes (one that outlives the child is no longer its
descendant); the steps on each system are in docs/platforms.md.
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

from hub.platform import LINUX, WINDOWS, WINDOWS_CREATION_FLAGS, portable
from hub.platform.linux import widen_pipe
from hub.platform.pipes import FdReader, FdWriter, StreamReader, StreamWriter, Writer
from hub.platform.sandbox import Exposure, Grants, wrap
from hub.platform.watchdog import INSTANCE_VAR, Known, ProcessTable

POSIX_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
WINDOWS_ENV = (
    "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
)  # fmt: skip
BASE_ENV = WINDOWS_ENV if WINDOWS else POSIX_ENV
# Grace period for a child to exit by itself after its stdin closes (the spec's first shutdown step).
EXIT_GRACE = 2.0
# Time between terminating a child (and its descendants) and killing them.
KILL_GRACE = 2.0
# How often an exit is polled where the system cannot tell the event loop (no pidfd), and while stopping.
EXIT_POLL = 0.05
STOP_POLL = 0.01


@dataclass(frozen=True)
class ProcessSpec:
    """How a stdio child is started: its command line, working directory and whole environment."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]
    cleanup: tuple[str, ...] = ()  # run after a stop: what removes a sandbox's remains (a container)
    exposure: Exposure | None = None  # what its sandbox shows of the host; None: it has none


def process_spec(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    inherit_env: Sequence[str],
    cwd: str | None,
    environ: Mapping[str, str] | None = None,
    sandbox: Grants | None = None,
    name: str = "",
) -> ProcessSpec:
    """How a stdio child with these settings is started, in the hub's environment (`environ`), confined by
    `sandbox` when it is given (hub.platform.sandbox).

    Raises:
        SandboxUnavailable: the sandbox cannot be set up here; the child must not be started.
    """
    source = os.environ if environ is None else environ
    child_env = {name: source[name] for name in (*BASE_ENV, *inherit_env) if name in source} | dict(env)
    if sandbox is None:
        return ProcessSpec((resolve_command(command, child_env), *args), cwd, child_env)
    inside = command if sandbox.container else resolve_command(command, child_env)
    # A child with no cwd: runs where the hub runs, and its sandbox shows that directory read-only as it would a
    # `cwd:` (bwrap would otherwise start it in its empty home: `--repository .` would find nothing there).
    where = cwd if cwd or sandbox.container else os.getcwd()
    wrapped = wrap(name, (inside, *args), where, child_env, sandbox, (*inherit_env, *env))
    confined_env = child_env | dict(wrapped.env)
    return ProcessSpec(
        wrapped.argv, None if sandbox.container else cwd, confined_env, wrapped.cleanup, wrapped.exposure
    )


def resolve_command(command: str, environ: Mapping[str, str], windows: bool = WINDOWS) -> str:
    """`command` as the system finds it on the child's PATH; else the one installed next to the hub (a desktop host
    starts the venv's `hub` with a PATH of its own, without the venv); else as given.

    On Windows a command is found with each extension of PATHEXT (`npx` is `npx.cmd`), never as the bare name (npm's
    `npx` beside `npx.cmd` is a shell script), and its full path is returned: the system starts only `.exe` files by
    a bare name, and looks on the hub's PATH, not the child's.
    """
    path = environ.get("PATH", os.defpath)
    if windows:
        pathext = environ.get("PATHEXT") or os.environ.get("PATHEXT") or DEFAULT_PATHEXT
        found = which_windows(command, path, pathext)
        if found is None and not _has_directory(command, windows):
            found = which_windows(command, str(Path(sys.executable).parent), pathext)  # the venv's Scripts
        return found if found is not None else command
    if shutil.which(command, path=path) is not None or _has_directory(command, windows):
        return command
    beside = shutil.which(command, path=str(Path(sys.executable).parent))  # the venv's bin
    return beside if beside is not None else command


DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD"


def which_windows(command: str, path: str, pathext: str) -> str | None:
    """Windows' lookup: each directory of `path` (`;`-separated), each extension of `pathext` unless `command` has
    one of them already; a command with a directory is looked for there only."""
    extensions = [e for e in pathext.split(";") if e]
    directories = [""] if _has_directory(command, True) else [d.strip('"') for d in path.split(";") if d.strip()]
    has_extension = any(command.lower().endswith(e.lower()) for e in extensions)
    names = [command] if has_extension else [command + e for e in extensions]
    for directory in directories:
        for name in names:
            candidate = os.path.join(directory, name) if directory else name
            if os.path.isfile(candidate):
                return candidate
    return None


def _has_directory(command: str, windows: bool) -> bool:
    return "/" in command or (windows and "\\" in command) or os.sep in command


class ChildProcess:
    """One running child: its pid, its pipes (attached by `attach`), its exit, and a bounded `stop`."""

    def __init__(
        self,
        pid: int,
        popen: subprocess.Popen[bytes] | None = None,
        fds: list[int] | None = None,
        process: Any = None,
        cleanup: tuple[str, ...] = (),
    ) -> None:
        self.pid = pid
        self._cleanup = cleanup
        self.returncode: int | None = None
        self.exited = anyio.Event()
        self._popen = popen  # the fast path's, with its pipes' descriptors (stdin, stdout, stderr)
        self._fds = fds or []
        self._process = process  # the portable path's anyio Process
        self._table = ProcessTable()
        self._start = self._table.start(pid)  # what tells it from a later process with its pid
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
            self._readers = [FdReader(stdout, on_stdout, on_end), FdReader(stderr, on_stderr, lambda: None)]
            self._stdin = FdWriter(stdin)
        else:
            process = self._process
            self._readers = [
                StreamReader(process.stdout, on_stdout, on_end, tg),
                StreamReader(process.stderr, on_stderr, lambda: None, tg),
            ]
            self._stdin = StreamWriter(process.stdin, tg)
        tg.start_soon(self._watch_exit)
        return self._stdin

    async def _watch_exit(self) -> None:
        if LINUX and self._popen is not None:
            # A pidfd becomes readable when the process exits: no polling, and an idle hub never wakes for it.
            with suppress(OSError, AttributeError):
                pidfd = os.pidfd_open(self.pid)
                try:
                    await anyio.wait_readable(pidfd)
                finally:
                    os.close(pidfd)
        while self.poll() is None:  # noqa: ASYNC110 - no portable event exists for an exit
            await anyio.sleep(EXIT_POLL)

    async def close_stdin(self) -> None:
        """Close the child's stdin (what it has not taken yet is dropped): the spec's first step of a shutdown."""
        if self._stdin is not None:
            self._stdin.close()
        if self._popen is not None and self._fds and self._fds[0] >= 0:
            with suppress(OSError):
                os.close(self._fds[0])
            self._fds[0] = -1
        elif self._process is not None and self._process.stdin is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._process.stdin.aclose()

    def poll(self) -> int | None:
        """The exit status if the process has exited (it is reaped then), else None."""
        if self.returncode is None:
            self.returncode = self._popen.poll() if self._popen is not None else self._process.returncode
            if self.returncode is not None:
                self.exited.set()
        return self.returncode

    async def stop(self, exit_grace: float = EXIT_GRACE) -> None:
        """Close stdin, wait `exit_grace`, then terminate and kill the child and its descendants; every wait
        bounded."""
        with anyio.CancelScope(shield=True):
            table = self._table
            family = table.descendants({self.pid})  # its helpers, while they are still its descendants
            await self.close_stdin()
            with anyio.move_on_after(exit_grace):  # polled: the watcher task may be cancelled by now
                while self.poll() is None:  # noqa: ASYNC110 - an exit has no portable event
                    await anyio.sleep(STOP_POLL)
            family = table.descendants({self.pid}) | family
            for kill in (False, True):
                family = table.living(family)
                if self.returncode is not None and not family:
                    break
                self._signal(family, kill)
                with anyio.move_on_after(KILL_GRACE):
                    while self.poll() is None or table.living(family):  # noqa: ASYNC110 - an end has no portable event
                        await anyio.sleep(STOP_POLL)
            if family := table.living(family):
                self._signal(family, kill=True)  # what outlived every grace period
            self.release()
            if self._cleanup:  # a container outlives its killed client: removed by name, bounded too
                with anyio.move_on_after(KILL_GRACE), suppress(OSError):
                    await anyio.run_process(list(self._cleanup), check=False)

    def _signal(self, family: Known, kill: bool) -> None:
        """Terminate (or kill) the child, while it is not reaped, its process group and its known descendants."""
        if self._table.groups:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL if kill else signal.SIGTERM)  # what stayed in it, known or not
        leader = {self.pid: self._start} if self.returncode is None and self._start is not None else {}
        self._table.signal(leader | family, kill)

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


async def spawn(spec: ProcessSpec, instance: str) -> ChildProcess:
    """Start a child, in a process group of its own where there are groups.

    Raises:
        OSError: the command or the working directory does not exist, or cannot be run.
    """
    env = {**spec.env, INSTANCE_VAR: instance}
    if not portable():
        return _spawn_fast(spec, env)
    kwargs: dict[str, Any] = {"creationflags": WINDOWS_CREATION_FLAGS} if WINDOWS else {"start_new_session": True}
    process = await anyio.open_process(
        list(spec.argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=spec.cwd,
        **kwargs,
    )
    return ChildProcess(process.pid, process=process, cleanup=spec.cleanup)


def _spawn_fast(spec: ProcessSpec, env: dict[str, str]) -> ChildProcess:
    """POSIX: the child's pipes are the hub's own non-blocking descriptors, watched by the event loop."""
    fds: list[int] = []
    try:
        for _ in range(3):
            fds += os.pipe()  # not inheritable (PEP 446): Popen passes the child its ends only
        in_read, in_write, out_read, out_write, err_read, err_write = fds
        popen = subprocess.Popen(
            spec.argv,
            stdin=in_read,
            stdout=out_write,
            stderr=err_write,
            env=env,
            cwd=spec.cwd,
            start_new_session=True,
        )
    except BaseException:
        for fd in fds:
            with suppress(OSError):
                os.close(fd)
        raise
    for fd in (in_read, out_write, err_write):
        os.close(fd)
    if LINUX:
        widen_pipe(out_read)
    return ChildProcess(popen.pid, popen=popen, fds=[in_write, out_read, err_read], cleanup=spec.cleanup)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"

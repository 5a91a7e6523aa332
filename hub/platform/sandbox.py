"""A child's sandbox: the command line that starts it confined, built in one place; what each kind allows is
docs/sandbox.md ("What each mode allows on each system"): bubblewrap on Linux, `sandbox-exec` on macOS, `docker run`
or `podman run` for a container; Windows has none, and a child that asks for one is refused.

A sandbox that cannot start raises `SandboxUnavailable` naming the cause and the fix; the caller starts nothing.
What a sandbox shows of the host is its `Exposure`, built here beside the command line from the same paths; `hidden`
and `unwritable` judge a path against it (hub.platform.denials uses them to tell a sandbox's denial from the host's).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# What a Linux sandbox shows of the system, read-only, where present (a symlink such as /bin -> usr/bin is kept a
# symlink).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# What a macOS sandbox-exec profile lets a child read of the system.
MACOS_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/System", "/Library", "/opt", "/private/etc", "/private/var/db", "/dev")
# Where a name server's address lives on systems with systemd-resolved (/etc/resolv.conf links there).
RESOLVER_PATHS = ("/run/systemd/resolve",)
PROBE_TIMEOUT = 10.0


class SandboxUnavailable(OSError):
    """The child's sandbox cannot be set up here; the message names the cause and the fix."""


@dataclass(frozen=True)
class Grants:
    """What a sandboxed child may do beyond the strict default: reach the network, read and write these absolute
    paths; or run in a container image instead."""

    network: bool = False
    write: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    container: str | None = None
    runtime: str | None = None  # "docker" or "podman"; None: whichever is on PATH (docker first)


@dataclass(frozen=True)
class Exposure:
    """What a sandboxed child sees of the host: `readable` paths (the system, its install directory and cwd, the
    grants), the `writable` ones among them, and the network or not. `private`: the sandbox's own places (its /tmp,
    /proc, /dev), whose host contents the child does not see and where what it writes is its own business."""

    readable: tuple[str, ...]
    writable: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    network: bool = False


@dataclass(frozen=True)
class Wrapped:
    """The confined command line, the environment changes it needs, what removes its remains after a stop, and what
    the sandbox shows of the host."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cleanup: tuple[str, ...] = ()
    exposure: Exposure = Exposure(())


def hidden(path: str, exposure: Exposure) -> bool:
    """Whether the sandbox, not the host, is why `path` is missing for the child: it exists on the host (a file, a
    directory or a link) and lies outside everything the sandbox shows of the host, or it is a link that leads out of
    it. A path the host does not have either is the child's own mistake, never a denial."""
    if not os.path.lexists(path):
        return False
    if not _covered(path, exposure.readable):
        return True
    real = os.path.realpath(path)
    return real != path and not _covered(real, exposure.readable)


def unwritable(path: str, exposure: Exposure) -> bool:
    """Whether the sandbox forbids changing `path`: it is outside the write grants, and it is a host path the sandbox
    shows read-only or one outside the sandbox's own places (a write in its own /tmp that fails, fails for a reason
    of the child's)."""
    if _covered(path, exposure.writable):
        return False
    return _covered(path, exposure.readable) or not _covered(path, exposure.private)


def describe(grants: Grants | None) -> str:
    """A short text of a sandbox, for `hub check` and hub_health."""
    if grants is None:
        return "none"
    parts = ["network"] if grants.network else []
    parts += [f"write {len(grants.write)}"] if grants.write else []
    parts += [f"read {len(grants.read)}"] if grants.read else []
    if grants.container is not None:
        return f"container {grants.container}" + (f" ({', '.join(parts)})" if parts else "")
    return f"{system_kind()} ({', '.join(parts)})" if parts else f"{system_kind()} strict"


def system_kind(platform: str = sys.platform) -> str:
    if platform.startswith("linux"):
        return "bwrap"
    if platform == "darwin":
        return "sandbox-exec"
    return "unsupported"


def wrap(
    name: str,
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[str, str],
    grants: Grants,
    own_env: Sequence[str] = (),
    platform: str = sys.platform,
) -> Wrapped:
    """`argv` confined by `grants`. `own_env`: the names the configuration gives the child (a container gets only
    these, as the host's PATH and HOME mean nothing inside an image).

    Raises:
        SandboxUnavailable: no bwrap, no user namespaces, no container runtime, a grant that does not exist, or a
            system with no sandbox.
    """
    for path in (*grants.write, *grants.read):
        if not os.path.isabs(path):
            raise SandboxUnavailable(f"server '{name}': sandbox path {path!r} is not absolute")
        if not os.path.exists(path):
            raise SandboxUnavailable(
                f"server '{name}': sandbox path {path} does not exist: create it, or remove it from sandbox.read/write"
            )
    if grants.container is not None:
        return container_argv(name, argv, cwd, grants, own_env, _runtime(name, grants))
    kind = system_kind(platform)
    if kind == "bwrap":
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable(
                f"server '{name}' needs its sandbox and bubblewrap is not installed: install it (apt-get install "
                "bubblewrap, dnf install bubblewrap), or set sandbox: none for this server"
            )
        failure = probe(bwrap)
        if failure:
            raise SandboxUnavailable(
                f"server '{name}' needs its sandbox and bwrap cannot create one here ({failure}): enable "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also "
                "kernel.apparmor_restrict_unprivileged_userns=0), or run the hub where they are allowed, or set "
                "sandbox: none for this server"
            )
        confined = (bwrap, *bwrap_args(argv, cwd, env, grants), *argv)
        return Wrapped(confined, {"TMPDIR": "/tmp"}, (), bwrap_exposure(argv, cwd, env, grants))
    if kind == "sandbox-exec":
        private = tempfile.mkdtemp(prefix=f"hub-{name}-")
        roots = install_roots(argv, env)
        profile = macos_profile(grants, private, roots)
        exposure = macos_exposure(grants, private, roots)
        return Wrapped(
            ("/usr/bin/sandbox-exec", "-p", profile, *argv), {"TMPDIR": private}, ("/bin/rm", "-rf", private), exposure
        )
    raise SandboxUnavailable(
        f"server '{name}' asks for a sandbox, and the hub has none on {platform}: set sandbox: {{container: IMAGE}} "
        "(Docker or Podman), or sandbox: none to run it unconfined; it is not started without one"
    )


@cache
def probe(bwrap: str) -> str:
    """Why bwrap cannot make a sandbox here ('' when it can): a first run with every namespace it will use."""
    try:
        done = subprocess.run(
            [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return "" if done.returncode == 0 else done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"


def bwrap_args(argv: Sequence[str], cwd: str | None, env: Mapping[str, str], grants: Grants) -> list[str]:
    """bubblewrap's options for `grants` (the command follows them)."""
    args = ["--die-with-parent", "--new-session", "--unshare-all", *system_args(grants.network)]
    home = env.get("HOME")
    if home and os.path.isabs(home) and home != "/" and not _covered(home, SYSTEM_PATHS):
        args += ["--dir", home]  # there, and empty: what is not granted of it is not seen
    readable = _shown(argv, cwd, env, grants)
    for path in _outermost(p for p in readable if not _covered(p, grants.write)):
        args += ["--ro-bind", path, path]
    for path in _outermost(grants.write):
        args += ["--bind", path, path]
    if cwd:
        args += ["--chdir", cwd]
    args += ["--setenv", "TMPDIR", "/tmp", "--remount-ro", "/", "--"]
    return args


def _shown(argv: Sequence[str], cwd: str | None, env: Mapping[str, str], grants: Grants) -> list[str]:
    """What bwrap shows read-only beyond the system: the command's install directories, the cwd, `read`. A cwd that
    holds the home (or is /) is entered, not shown: it would show all of the home."""
    shown_cwd = [cwd] if cwd and not _holds_home(cwd, env.get("HOME")) else []
    return [*install_roots(argv, env), *shown_cwd, *grants.read]


def bwrap_exposure(argv: Sequence[str], cwd: str | None, env: Mapping[str, str], grants: Grants) -> Exposure:
    """What `bwrap_args` shows of the host, from the same paths: the system, what `_shown` adds, the grants; /tmp,
    /proc and /dev are the sandbox's own; the home is an empty directory (nothing of the host's)."""
    system = [p for p in SYSTEM_PATHS if os.path.lexists(p)]
    system += list(RESOLVER_PATHS) if grants.network else []
    readable = (*system, *_shown(argv, cwd, env, grants), *grants.write)
    return Exposure(readable, grants.write, ("/tmp", "/proc", "/dev"), grants.network)


def system_args(network: bool) -> list[str]:
    """The system, read-only (its symlinks kept), a private /proc, /dev and /tmp; the network if granted."""
    args = ["--share-net"] if network else []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    if network:
        for path in RESOLVER_PATHS:
            args += ["--ro-bind-try", path, path]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def container_argv(
    name: str, argv: Sequence[str], cwd: str | None, grants: Grants, own_env: Sequence[str], runtime: str
) -> Wrapped:
    """`docker run` (or podman) of the image with the command: stdin attached, removed after, no network unless
    granted, a read-only root, only the listed mounts; the values of `own_env` pass through the client's
    environment, never its command line."""
    container = f"hub-{_slug(name)}-{secrets.token_hex(4)}"
    args = [runtime, "run", "-i", "--rm", "--name", container, "--read-only", "--tmpfs", "/tmp"]
    if not grants.network:
        args += ["--network", "none"]
    for path in grants.read:
        args += ["--mount", f"type=bind,source={path},target={path},readonly"]
    for path in grants.write:
        args += ["--mount", f"type=bind,source={path},target={path}"]
    for variable in own_env:
        args += ["-e", variable]
    if cwd:
        args += ["-w", cwd]
    exposure = Exposure((*grants.read, *grants.write), grants.write, ("/tmp",), grants.network)
    return Wrapped((*args, grants.container or "", *argv), {}, (runtime, "rm", "-f", container), exposure)


def _runtime(name: str, grants: Grants) -> str:
    for candidate in (grants.runtime,) if grants.runtime else ("docker", "podman"):
        found = shutil.which(candidate)
        if found is not None:
            return found
    wanted = grants.runtime or "docker or podman"
    raise SandboxUnavailable(
        f"server '{name}' runs in container {grants.container} and {wanted} is not installed: install Docker or "
        "Podman, or set sandbox: strict (bubblewrap) or sandbox: none for this server"
    )


def install_roots(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Where the command (and the interpreter of its script) is installed, outside the system's directories: the
    venv and its base Python, the topmost node_modules, or the prefix of a `bin` directory. Never the home itself."""
    found: list[str] = []
    if not argv:
        return found
    path = env.get("PATH", os.defpath)
    command = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=path)
    if command is None:
        return found
    candidates = [Path(command), Path(os.path.realpath(command))]
    interpreter = _interpreter(candidates[1], path)
    if interpreter is not None:
        candidates += [Path(interpreter), Path(os.path.realpath(interpreter))]
    home = env.get("HOME")
    for candidate in candidates:
        for root in _roots_of(candidate):
            if _holds_home(root, home):
                root = str(candidate.parent)  # never the whole home: the command's own directory only
            if not _holds_home(root, home) and not _covered(root, SYSTEM_PATHS) and root not in found:
                found.append(root)
    return found


def _holds_home(path: str, home: str | None) -> bool:
    """Whether showing `path` would show / or the whole home."""
    return path == "/" or (bool(home) and Path(home or "/").is_relative_to(path))


def _roots_of(command: Path) -> list[str]:
    for parent in command.parents:
        config = parent / "pyvenv.cfg"
        if config.is_file():
            roots = [str(parent)]
            for line in config.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    roots.append(str(Path(os.path.realpath(value.strip())).parent))
            return roots
    modules = [p for p in command.parents if p.name == "node_modules"]
    if modules:
        return [str(modules[-1])]
    if command.parent.name in ("bin", ".bin", "Scripts"):
        return [str(command.parent.parent)]
    return [str(command.parent)]


def _interpreter(script: Path, path: str) -> str | None:
    """The interpreter a `#!` script names (`/usr/bin/env node` looked up on `path`)."""
    try:
        with script.open("rb") as file:
            head = file.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[-1], path=path)
    return words[0]


def _covered(path: str, by: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in by)


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths without those inside another of them, in order."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not _covered(p, [q for q in unique if q != p])]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name) or "child"


def macos_exposure(grants: Grants, private_tmp: str, roots: Sequence[str] = ()) -> Exposure:
    """What `macos_profile` lets a child read and write, from the same paths: the system, the command's install
    directory, the grants, and its private temporary directory."""
    shown = (*MACOS_SYSTEM_PATHS, *roots, *grants.read, *grants.write, private_tmp)
    return Exposure(shown, (*grants.write, private_tmp), (), grants.network)


def macos_profile(grants: Grants, private_tmp: str, roots: Sequence[str] = ()) -> str:
    """A sandbox-exec (SBPL) profile: everything denied but process basics, reads of the system, the command's
    install directory and the grants, writes to the grants and `private_tmp`, and the network only if granted."""

    def quote(path: str) -> str:
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'

    exposure = macos_exposure(grants, private_tmp, roots)
    reads = " ".join(f"(subpath {quote(p)})" for p in exposure.readable)
    writes = " ".join(f"(subpath {quote(p)})" for p in exposure.writable)
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-fork)",
        "(allow process-exec)",
        "(allow signal (target self))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        '(allow file-read-metadata (literal "/"))',
        f"(allow file-read* {reads})",
        f'(allow file-write* {writes} (literal "/dev/null") (literal "/dev/tty"))',
    ]
    if grants.network:
        lines.append("(allow network*)")
    return "\n".join(lines) + "\n"

"""The deployment artifacts as data, for the tests beside: the Dockerfile's instructions per stage, the Kubernetes
manifests by kind, the servers.yaml of the ConfigMap, and that ConfigMap and the Secret laid out on disk exactly as
the kubelet lays out a volume (timestamped directory, `..data` symlink, one symlink per key)."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import REPO
from tests.support.system import system_tool

DEPLOY = REPO / "deploy"
KUBE = DEPLOY / "kubernetes"
DOCKERFILE = REPO / "Dockerfile"
# Where the Deployment mounts the Secret (the token file, one file per ${secret:NAME}).
SECRETS_MOUNT = "/run/secrets/hub"
# What a stop costs after the drain: each child's stdin closed, 2 s, SIGTERM, 2 s, SIGKILL (docs/operations.md,
# "No orphans": "about 6 s at worst").
CHILD_STOP_S = 6


# ---- checkers ----------------------------------------------------------------------------------------------------


tool = system_tool  # a checker binary (haproxy -c, kubeconform, ...)


# ---- Dockerfile ------------------------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str  # upper case: FROM, RUN, ...
    text: str  # the rest of the line, continuations joined

    def exec_form(self) -> list[str]:
        """The JSON array of an exec-form CMD / ENTRYPOINT / HEALTHCHECK CMD."""
        text = self.text
        if self.keyword == "HEALTHCHECK":
            text = text[text.index("CMD") + 3 :]
        value = json.loads(text)
        assert isinstance(value, list), f"{self.keyword} is not in exec form: {self.text}"
        return [str(v) for v in value]

    def flags(self) -> dict[str, str]:
        """`--name=value` options at the start (COPY --from=build, HEALTHCHECK --interval=30s)."""
        found: dict[str, str] = {}
        for word in shlex.split(self.text):
            if not word.startswith("--"):
                break
            name, _, value = word[2:].partition("=")
            found[name] = value
        return found


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"no {keyword} in the stage FROM {self.base}"
        return found[-1]

    def index(self, keyword: str) -> int:
        return max(n for n, i in enumerate(self.instructions) if i.keyword == keyword)


@dataclass
class Dockerfile:
    global_args: dict[str, str]  # ARGs before the first FROM, with their defaults
    stages: list[Stage]

    def arg_default(self, name: str) -> str:
        """The default of a build argument (the first stage that declares it with one, else the global one)."""
        for stage in self.stages:
            for i in stage.all("ARG"):
                key, has_default, value = arg(i.text)
                if key == name and has_default:
                    return value
        return self.global_args[name]

    def expand(self, text: str) -> str:
        for name, value in self.global_args.items():
            text = text.replace("${" + name + "}", value).replace("$" + name, value)
        return text


def arg(text: str) -> tuple[str, bool, str]:
    """An ARG's name, whether it has a default, and the default (quotes removed)."""
    key, has_default, value = shlex.split(text)[0].partition("=")
    return key, bool(has_default), value


def instructions(text: str) -> list[Instruction]:
    """Logical lines: comments and blank lines dropped, backslash continuations joined."""
    found: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, rest = line.partition(" ")
        found.append(Instruction(keyword.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def dockerfile() -> Dockerfile:
    parsed = Dockerfile({}, [])
    for i in instructions(DOCKERFILE.read_text()):
        if i.keyword == "FROM":
            words = i.text.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            parsed.stages.append(Stage(words[0], name))
        elif not parsed.stages:
            assert i.keyword == "ARG", f"only ARG may come before the first FROM, not {i.keyword}"
            key, _, value = arg(i.text)
            parsed.global_args[key] = value
        else:
            parsed.stages[-1].instructions.append(i)
    return parsed


def dockerignored(relative: str) -> bool:
    """Whether .dockerignore keeps `relative` (a path in the repository) out of the build context: the last pattern
    that matches the path or one of its parent directories decides; `!` re-includes."""
    excluded = False
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for raw in (REPO / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            matched = any(fnmatch.fnmatch(part, pattern[3:]) for part in parts)
        else:
            matched = any(fnmatch.fnmatch(p, pattern) for p in prefixes)
        if matched:
            excluded = not negate
    return excluded


# ---- Kubernetes ------------------------------------------------------------------------------------------------


def manifest_files() -> list[Path]:
    """Every manifest under deploy/kubernetes (kustomization.yaml is kustomize's, not the API's)."""
    return sorted(p for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def objects(kind: str) -> list[dict[str, Any]]:
    return [d for p in manifest_files() for d in documents(p) if d["kind"] == kind]


def one(kind: str) -> dict[str, Any]:
    found = objects(kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = one("Deployment")["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    containers = pod_spec()["containers"]
    assert len(containers) == 1
    found: dict[str, Any] = containers[0]
    return found


def option(args: list[str], name: str) -> str:
    """The value after `name` in a command line."""
    assert name in args, f"{name} is not in {args}"
    return args[args.index(name) + 1]


def servers_yaml() -> str:
    """The servers.yaml the ConfigMap carries."""
    text: str = one("ConfigMap")["data"]["servers.yaml"]
    return text


def servers_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(servers_yaml())
    return config


# ---- volumes as the kubelet writes them --------------------------------------------------------------------------


def kubelet_volume(
    directory: Path, files: dict[str, str | bytes], stamp: str = "..2026_01_01_00_00_00.000000001"
) -> None:
    """Write `files` into `directory` as the kubelet's atomic writer does for a ConfigMap or Secret volume: the
    contents in a timestamped directory, `..data` a symlink to it, each key a symlink through `..data`. Called again
    on the same directory (with another `stamp`), it updates the volume as the kubelet does: the new timestamped
    directory, `..data` swapped to it by one rename, the old directory removed."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "..data"
    old = os.readlink(data) if data.is_symlink() else None
    assert old != stamp, "give each update its own stamp"
    target = directory / stamp
    target.mkdir()
    for name, content in files.items():
        (target / name).write_bytes(content.encode() if isinstance(content, str) else content)
    swap = directory / "..data_tmp"
    os.symlink(stamp, swap)
    os.replace(swap, data)  # the atomic swap
    for name in files:
        link = directory / name
        if not link.is_symlink():
            os.symlink(f"..data/{name}", link)
    if old is not None:
        for leftover in (directory / old).iterdir():
            leftover.unlink()
        (directory / old).rmdir()

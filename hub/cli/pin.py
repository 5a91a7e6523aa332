"""`hub pin`, `hub pin --diff [CHILD]`, `hub pin --approve CHILD [TOOL]`: the lock file next to servers.yaml
(hub.config.lock; what each does and its exit status: `hub pin --help`, docs/cli.md).

The definitions are the children's own, as they listed them (before the hub renames, overrides or quarantines
anything), tools only those their `tools:` filter exposes; they are shown with control and format characters
escaped, so that a description cannot hide text from the reviewer (terminal escapes, bidirectional overrides).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hub.cli.output import EXIT_USAGE, fail
from hub.config.lock import (
    BASE_KEY,
    ChildPins,
    FieldChange,
    Lock,
    LockError,
    Verdict,
    child_document,
    entry_digest,
    load_lock,
    lock_path,
    pins_of,
    save_lock,
)
from hub.config.settings import HubSettings
from hub.protocol import errors
from hub.relay.exposure import shape_tool, tool_suffixes
from hub.relay.naming import expose_tool_name
from hub.upstream.child import Child, ChildState

if TYPE_CHECKING:
    from hub.app import Hub

EXIT_DIFFERS = 1
HINT = "review them with `hub pin --diff`, then accept them with `hub pin --approve CHILD [TOOL]`"


@dataclass(frozen=True)
class Current:
    """What a child offers now, as far as pinning goes: its exposed tools, its prompts, its instructions."""

    tools: tuple[dict[str, Any], ...]
    prompts: tuple[dict[str, Any], ...]
    instructions: str | None

    def pins(self) -> ChildPins:
        return pins_of(self.tools, self.prompts, self.instructions)


Changed = list[tuple[str, Verdict, list[FieldChange]]]
KINDS = ("tool", "prompt")


@dataclass(frozen=True)
class ChildDiff:
    """How a child differs from its pins: per kind (KINDS), what is new or changed and the names no longer listed;
    whether its instructions changed (appeared, disappeared, or other text)."""

    changed: dict[str, Changed]
    removed: dict[str, list[str]]
    instructions: bool

    def __bool__(self) -> bool:
        return self.instructions or any(self.changed.values()) or any(self.removed.values())

    def summary(self) -> list[str]:
        lines = []
        for kind in KINDS:
            for item, verdict, changes in self.changed[kind]:
                what = "is new" if verdict == "new" else f"changed ({', '.join(c.field for c in changes)})"
                lines.append(f"{kind} {_visible(item)} {what}")
            lines += [f"{kind} {_visible(item)} is no longer listed" for item in self.removed[kind]]
        return lines + (["instructions changed"] if self.instructions else [])


def current(child: Child) -> Current:
    """The child's current definitions: tools its filter exposes (first of a name, as the catalog keeps), prompts."""
    allows = child.config.tools.allows
    tools = _first_of_each(t for t in child.listing.tools if allows(str(t.get("name", ""))))
    return Current(tools, _first_of_each(child.listing.prompts), child.instructions)


def _first_of_each(items: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    kept: dict[str, dict[str, Any]] = {}
    for item in items:
        kept.setdefault(str(item.get("name", "")), item)
    return tuple(kept.values())


def differences(lock: Lock, name: str, now: Current) -> ChildDiff:
    """How child `name` as it is `now` differs from its pins in `lock`."""
    pinned = lock.servers.get(name, ChildPins())
    changed: dict[str, Changed] = {}
    removed: dict[str, list[str]] = {}
    for kind, items, verdict_of, changes_of, pins in (
        ("tool", now.tools, lock.tool_verdict, lock.tool_changes, pinned.tools),
        ("prompt", now.prompts, lock.prompt_verdict, lock.prompt_changes, pinned.prompts),
    ):
        verdicts = [(str(item.get("name", "")), verdict_of(name, item), item) for item in items]
        changed[kind] = [(item, v, changes_of(name, found)) for item, v, found in verdicts if v != "pinned"]
        removed[kind] = sorted(set(pins) - {item for item, _, _ in verdicts})
    return ChildDiff(changed, removed, lock.instructions_verdict(name, now.instructions) != "pinned")


async def run_pin(hub: Hub, args: argparse.Namespace, out: TextIO) -> int:
    """`hub pin` with `args` (`diff`, `approve`, `wait`): the lock is read and the arguments checked before any
    child starts; the hub then runs until every child is ready or has failed once (bounded by `--wait`)."""
    path = lock_path(hub.loaded.path)
    try:
        lock = load_lock(path)
    except LockError as exc:
        return fail(str(exc), EXIT_USAGE)
    servers = hub.loaded.config.servers
    approve: list[str] | None = args.approve
    if approve is not None and approve[0] not in servers:
        known = ", ".join(sorted(servers)) or "none"
        return fail(f"no server named {approve[0]!r} in {hub.loaded.path} (servers: {known}); the lock is unchanged")
    if approve is not None and not servers[approve[0]].enabled:
        return fail(f"server {approve[0]!r} is disabled (enabled: false) in {hub.loaded.path}; the lock is unchanged")
    diff_child: str | None = args.diff
    if diff_child is not None:
        if lock is None:
            return fail(f"there is no lock file {path} yet: run `hub pin` first", EXIT_USAGE)
        if diff_child and diff_child not in servers:
            return fail(f"no server named {diff_child!r} in {hub.loaded.path}", EXIT_USAGE)
        if diff_child and not servers[diff_child].enabled:
            return fail(f"server {diff_child!r} is disabled (enabled: false): it cannot be compared", EXIT_USAGE)
    async with hub.running():
        await hub.startup.settle(limit_s=args.wait)
        if approve is not None:
            return await _approve(hub, lock or Lock(), path, approve[0], approve[1] if len(approve) > 1 else None, out)
        if diff_child is not None:
            assert lock is not None
            return _diff(hub, lock, diff_child or None, out)
        return _pin(hub, lock, path, out)


def _pin(hub: Hub, lock: Lock | None, path: Path, out: TextIO) -> int:
    pinned = lock or Lock()
    not_ready = changed = False
    for name, child in hub.children.items():
        if child.state is not ChildState.READY:
            verb = f"kept the pins of {name}" if name in pinned.servers else f"not pinned {name}"
            out.write(f"{verb}: {child.unavailable_reason()}\n")
            not_ready = True
        elif name not in pinned.servers:
            now = current(child)
            pinned = pinned.with_child(name, now.pins())
            out.write(f"pinned {name}: {_count(len(now.tools), 'tool')}, {_count(len(now.prompts), 'prompt')}\n")
        else:
            diff = differences(pinned, name, current(child))
            out.writelines(f"{name}: {line}\n" for line in diff.summary() or ["matches its pins"])
            changed = changed or bool(diff)
    for name in sorted(set(pinned.servers) - set(hub.children)):
        out.write(f"kept the pins of {name}: not running (disabled, or not in {hub.loaded.path.name})\n")
    if pinned.servers and pinned != lock:
        try:
            save_lock(path, pinned)
        except LockError as exc:
            return fail(str(exc))
        out.write(f"wrote {path}\n")
    elif lock is None:
        out.write(f"nothing to pin: no server is ready; {path} not written\n")
    else:
        out.write(f"{path} unchanged\n")
    if changed:
        print(f"hub: servers changed since they were pinned: {HINT}", file=sys.stderr)
    return EXIT_DIFFERS if changed or not_ready else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


async def _approve(hub: Hub, lock: Lock, path: Path, name: str, tool: str | None, out: TextIO) -> int:
    child = hub.children.get(name)
    if child is None or child.state is not ChildState.READY:
        why = child.unavailable_reason() if child is not None else "it is not running"
        return fail(f"cannot approve {name}: {why}; the lock is unchanged")
    now = current(child)
    before = lock.servers.get(name, ChildPins())
    if tool is None:
        pins = now.pins()
        diff = differences(lock, name, now)
        what = ("; ".join(diff.summary()) or "no changes") if name in lock.servers else "pinned for the first time"
        message = f"approved {name}: {_count(len(pins.tools), 'tool')}, {_count(len(pins.prompts), 'prompt')} ({what})"
    else:
        found = _find_tool(child, now, tool, hub.loaded.config.hub)
        if isinstance(found, str):
            return fail(found)
        pins = ChildPins({**before.tools, **pins_of([found], (), None).tools}, before.prompts, before.instructions)
        state = lock.tool_verdict(name, found)
        message = f"approved {name}: tool {found['name']}" + ("" if state == "pinned" else f" ({state})")
    try:
        save_lock(path, lock.with_child(name, pins))
    except LockError as exc:
        return fail(str(exc))
    out.write(f"{message}\nwrote {path}\n")
    return await _share(hub, name, pins, lock.servers.get(name), out)


async def _share(hub: Hub, name: str, pins: ChildPins, base: ChildPins | None, out: TextIO) -> int:
    """With shared state (replicas, `state: redis`): the approval is stored there too, with the entry it amends
    (`base`), and every replica applies it while its own file still has that entry."""
    state = hub.shared
    if not state.shared:
        return 0
    try:
        await state.approve_pins(name, {**child_document(pins), BASE_KEY: entry_digest(base)})
    except errors.HubError as exc:
        return fail(f"{exc.message}; the lock file was written, the replicas were not told")
    out.write(f"shared with the replicas ({name})\n")
    return 0


def _find_tool(child: Child, now: Current, tool: str, settings: HubSettings) -> dict[str, Any] | str:
    """The exposed tool `tool` names (the child's name for it, else the host's), or why there is none."""
    for candidate in now.tools:
        if candidate.get("name") == tool:
            return candidate
    siblings = tool_suffixes(child.config, child.listing.tools)
    for candidate in now.tools:
        if isinstance(candidate.get("name"), str) and _exposed(child, candidate, siblings, settings) == tool:
            return candidate
    if any(t.get("name") == tool for t in child.listing.tools):
        return f"server {child.name!r} lists {tool!r} but does not expose it (tools: allow/deny); the lock is unchanged"
    return (
        f"server {child.name!r} lists no tool {tool!r} (give its own name, or the exposed one "
        f"{_exposed(child, {'name': tool}, siblings, settings)!r}); the lock is unchanged"
    )


def _exposed(child: Child, tool: dict[str, Any], siblings: frozenset[str], settings: HubSettings) -> str:
    """The name the host knows the child's `tool` by, as the catalog makes it (its override's `name`, among the
    child's other tools, within the name budget)."""
    suffix = shape_tool(child.config, child.name, tool).suffix
    return expose_tool_name(child.prefix, suffix, settings.name_budget, siblings, always_prefix=settings.always_prefix)


def _diff(hub: Hub, lock: Lock, only: str | None, out: TextIO) -> int:
    differs = unknown = False
    for name, child in hub.children.items():
        if only is not None and name != only:
            continue
        if child.state is not ChildState.READY:
            out.write(f"{name}: not compared: {child.unavailable_reason()}\n")
            unknown = True
            continue
        if name not in lock.servers:
            out.write(f"{name}: not pinned yet (`hub pin` pins it)\n")
            differs = True
            continue
        now = current(child)
        diff = differences(lock, name, now)
        if diff:
            differs = True
            _write_diff(name, lock, now, diff, out)
    if differs:
        return EXIT_DIFFERS
    if unknown:  # not "no changes": what a server that is not ready lists is not known
        return fail("not every server could be compared: they were not ready", EXIT_USAGE)
    out.write("no changes since the pin\n")
    return 0


def _write_diff(name: str, lock: Lock, now: Current, diff: ChildDiff, out: TextIO) -> None:
    pinned = lock.servers[name]
    for kind, pins in zip(KINDS, (pinned.tools, pinned.prompts), strict=True):
        for item, verdict, changes in diff.changed[kind]:
            out.write(f"{name}: {kind} {_visible(item)} {'is new' if verdict == 'new' else 'changed'}\n")
            for change in changes:
                out.write(f"  {change.field}:\n")
                out.writelines(f"    {line}\n" for line in field_diff(change.before, change.after))
        for item in diff.removed[kind]:
            out.write(f"{name}: {kind} {_visible(item)} is no longer listed (pinned: {pins[item].digest})\n")
    if diff.instructions:
        out.write(f"{name}: instructions changed (pinned: {pinned.instructions or 'none'})\n")
        out.writelines(f"    {line}\n" for line in field_diff(None, now.instructions))


def field_diff(before: Any, after: Any) -> list[str]:
    """A unified diff of one field, `- ` and `+ ` lines: of the text's lines for strings, of the pretty JSON for
    anything else (schemas, annotations); None is an absent field. Characters that could mislead a terminal are
    escaped."""
    old, new = _lines(before, after), _lines(after, before)
    body = list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]  # [2:]: the ---/+++ header
    lines = [line if line.startswith("@@") else f"{line[:1]} {_visible(line[1:])}" for line in body]
    if not lines:  # differs only where lines cannot show it (a trailing newline, "" against absent)
        lines = [f"- {_visible(json.dumps(before))}", f"+ {_visible(json.dumps(after))}"]
    return lines


def _lines(value: Any, other: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) and (other is None or isinstance(other, str)):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _visible(text: str) -> str:
    """`text` with control and format characters (escapes, bidirectional overrides, zero-width) as `\\x..`/`\\u....`."""
    if text.isprintable():
        return text
    return "".join(
        c if c == "\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Zl", "Zp") else _escape(c) for c in text
    )


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

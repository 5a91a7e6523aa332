"""Tool pinning: `servers.lock`, the digests of what a team approved of each child, and verdicts against it.

Per child, the lock holds the SHA-256 of each tool's and prompt's canonical definition and of the child's
`instructions`, with the definitions themselves (a diff needs no network; a reviewer sees in git what was approved).
Pins are keyed by the child's own names (before the prefix). What a child sends is checked, never trusted: any input,
however malformed, yields a verdict and never an exception. The file is JSON with sorted keys (docs/safety.md):

    {"version": 1, "servers": {"icinga": {"instructions": "sha256:...",
        "tools": {"get_host": {"sha256": "sha256:...", "definition": {...}}}, "prompts": {}}}}
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hub.platform.files import replace_file

LOCK_VERSION = 1
DIGEST_PREFIX = "sha256:"

TOOL_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
PROMPT_FIELDS = ("name", "title", "description", "arguments")

Verdict = Literal["pinned", "changed", "new"]


class LockError(Exception):
    """The lock file cannot be read, parsed or written; the message names the file and what is wrong."""


def lock_path(config_path: Path) -> Path:
    """`servers.yaml` -> `servers.lock`, in the same directory."""
    return config_path.with_suffix(".lock")


def _pick(item: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The part of a definition that is pinned: the `fields` it has (null kept, absent stays absent); the rest
    (`_meta`, `icons`, `execution`, unknown keys) is ignored."""
    return {key: item[key] for key in fields if key in item} if isinstance(item, dict) else {}


def canonical_tool(tool: dict[str, Any]) -> dict[str, Any]:
    return _pick(tool, TOOL_FIELDS)


def canonical_prompt(prompt: dict[str, Any]) -> dict[str, Any]:
    return _pick(prompt, PROMPT_FIELDS)


def digest(definition: Any) -> str:
    """`sha256:` + the hex SHA-256 of `definition` as compact JSON with sorted keys. A lone surrogate (valid in JSON
    text, not in UTF-8) is encoded as its code point, so every string a child can send has a digest.

    Raises:
        TypeError, ValueError, RecursionError: `definition` is not JSON (never the case for a parsed JSON message).
    """
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return DIGEST_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _digest_or_none(definition: Any) -> str | None:
    try:
        return digest(definition)
    except (TypeError, ValueError, RecursionError):  # a hostile definition: unserialisable, cyclic, absurdly deep
        return None


@dataclass(frozen=True)
class FieldChange:
    """One field of a definition that differs from its pin; `before` or `after` is None when the field is absent."""

    field: str
    before: Any
    after: Any


@dataclass(frozen=True)
class Pin:
    digest: str
    definition: dict[str, Any]


@dataclass(frozen=True)
class ChildPins:
    """What was approved of one child; `instructions` is the digest of its instructions, None when it sent none."""

    tools: Mapping[str, Pin] = field(default_factory=dict)
    prompts: Mapping[str, Pin] = field(default_factory=dict)
    instructions: str | None = None


def pins_of(tools: Iterable[dict[str, Any]], prompts: Iterable[dict[str, Any]], instructions: str | None) -> ChildPins:
    """Pins for a child's current definitions, as given (the caller leaves out tools its filter hides).

    An item without a string name cannot be pinned and is skipped (it stays "new"); of two items with the same name
    the first is pinned, as the catalog keeps the first.
    """
    return ChildPins(_pin_table(tools, TOOL_FIELDS), _pin_table(prompts, PROMPT_FIELDS), _text_digest(instructions))


def _pin_table(items: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> dict[str, Pin]:
    pins: dict[str, Pin] = {}
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        definition = _pick(item, fields)
        value = _digest_or_none(definition)
        if isinstance(name, str) and name not in pins and value is not None:
            pins[name] = Pin(value, definition)
    return pins


def _text_digest(text: Any) -> str | None:
    return digest(text) if isinstance(text, str) else None


@dataclass(frozen=True)
class Lock:
    """Every child's pins. Verdicts and changes never raise; a tool without a string name is always `new`."""

    servers: Mapping[str, ChildPins] = field(default_factory=dict)

    def tool_verdict(self, child: str, tool: dict[str, Any]) -> Verdict:
        """`pinned` if `tool` matches its pin, `changed` if it differs, `new` if the child or the tool has none."""
        return _verdict(self._pins(child).tools, tool, TOOL_FIELDS)

    def prompt_verdict(self, child: str, prompt: dict[str, Any]) -> Verdict:
        return _verdict(self._pins(child).prompts, prompt, PROMPT_FIELDS)

    def instructions_verdict(self, child: str, instructions: str | None) -> Verdict:
        """`new` if the child has no pins; else `pinned` if `instructions` match the pinned ones (None matching
        None: no instructions then and now), `changed` otherwise (appearing or disappearing included)."""
        pins = self.servers.get(child)
        if pins is None:
            return "new"
        text = instructions is None or isinstance(instructions, str)
        return "pinned" if text and _text_digest(instructions) == pins.instructions else "changed"

    def tool_changes(self, child: str, tool: dict[str, Any]) -> list[FieldChange]:
        """How `tool` differs from its pin, in `TOOL_FIELDS` order: [] when it matches; every field it has when new."""
        return _changes(self._pins(child).tools, tool, TOOL_FIELDS)

    def prompt_changes(self, child: str, prompt: dict[str, Any]) -> list[FieldChange]:
        return _changes(self._pins(child).prompts, prompt, PROMPT_FIELDS)

    def with_child(self, child: str, pins: ChildPins) -> Lock:
        return Lock({**self.servers, child: pins})

    def _pins(self, child: str) -> ChildPins:
        return self.servers.get(child, ChildPins())


def _pin_of(pins: Mapping[str, Pin], item: Any) -> Pin | None:
    name = item.get("name") if isinstance(item, dict) else None
    return pins.get(name) if isinstance(name, str) else None


def _verdict(pins: Mapping[str, Pin], item: Any, fields: tuple[str, ...]) -> Verdict:
    pin = _pin_of(pins, item)
    if pin is None:
        return "new"
    return "pinned" if _digest_or_none(_pick(item, fields)) == pin.digest else "changed"


def _changes(pins: Mapping[str, Pin], item: Any, fields: tuple[str, ...]) -> list[FieldChange]:
    pin = _pin_of(pins, item)
    before = pin.definition if pin is not None else {}
    after = _pick(item, fields)
    changes = []
    for key in fields:
        if key not in before and key not in after:
            continue
        if key not in before or key not in after or not _same(before[key], after[key]):
            changes.append(FieldChange(key, before.get(key), after.get(key)))
    return changes


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON, which is what is pinned (in Python 1 == 1.0 == True, and nan != nan)."""
    theirs = _digest_or_none(new)
    return theirs is not None and theirs == _digest_or_none(old)


# ---- the file -----------------------------------------------------------------------------------------------------


def load_lock(path: Path) -> Lock | None:
    """The lock at `path`; None if there is no such file.

    Raises:
        LockError: the file cannot be read, is not JSON, has another version, or an entry is malformed or does not
            match its own digest (edited by hand, or a bad merge); the message names the file and the entry.
    """
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockError(f"cannot read the lock file {path}: {exc.strerror}") from exc
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, absurdly deep or long
        raise LockError(f"the lock file {path} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise LockError(f"the lock file {path} must hold a JSON object with 'version' and 'servers'")
    version = document.get("version")
    if version != LOCK_VERSION or isinstance(version, bool):
        raise LockError(
            f"the lock file {path} has version {json.dumps(version)}; this hub reads version {LOCK_VERSION} "
            "(run `hub pin` with the hub that wrote it, or delete the file and pin again)"
        )
    servers = document.get("servers")
    if not isinstance(servers, dict):
        raise LockError(f"the lock file {path}: 'servers' must be an object of server name -> pins")
    return Lock({name: child_from_document(entry, f"{path}: servers.{name}") for name, entry in servers.items()})


def child_from_document(entry: Any, where: str) -> ChildPins:
    """One child's entry (of the lock file, or of the shared state), checked.

    Raises:
        LockError: naming `where` and what is wrong.
    """
    if not isinstance(entry, dict):
        raise LockError(f"{where} must be an object with 'tools', 'prompts' and 'instructions'")
    instructions = entry.get("instructions")
    if instructions is not None and not _is_digest(instructions):
        raise LockError(f"{where}.instructions must be null or a digest 'sha256:<64 hex digits>'")
    return ChildPins(
        tools=_parse_pins(entry.get("tools", {}), TOOL_FIELDS, f"{where}.tools"),
        prompts=_parse_pins(entry.get("prompts", {}), PROMPT_FIELDS, f"{where}.prompts"),
        instructions=instructions,
    )


def _parse_pins(entries: Any, fields: tuple[str, ...], where: str) -> dict[str, Pin]:
    if not isinstance(entries, dict):
        raise LockError(f"{where} must be an object of name -> {{sha256, definition}}")
    pins: dict[str, Pin] = {}
    for name, entry in entries.items():
        here = f"{where}.{name}"
        if not isinstance(entry, dict) or not _is_digest(entry.get("sha256")):
            raise LockError(f"{here} must be an object with 'sha256' (sha256:<64 hex digits>) and 'definition'")
        definition = entry.get("definition")
        if not isinstance(definition, dict) or definition.get("name") != name:
            raise LockError(f"{here}.definition must be an object whose 'name' is {json.dumps(name)}")
        extra = sorted(set(definition) - set(fields))
        if extra:
            raise LockError(f"{here}.definition has fields a pin does not keep: {', '.join(extra)}")
        if _digest_or_none(definition) != entry["sha256"]:
            raise LockError(f"{here}: the definition does not match its sha256 (edited by hand, or a bad merge?)")
        pins[name] = Pin(entry["sha256"], definition)
    return pins


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(DIGEST_PREFIX + "[0-9a-f]{64}", value) is not None


def save_lock(path: Path, lock: Lock) -> None:
    """Write `lock` atomically (a reader sees the old file or the new one), mode by the umask (it is meant for git).
    JSON, keys sorted, indented by 2: the same lock always gives the same bytes. Non-ASCII text stays readable,
    unless a string holds a lone surrogate (not UTF-8): then the whole file is written ASCII-escaped.

    Raises:
        LockError: the file cannot be written; the message names it and why.
    """
    document = {"version": LOCK_VERSION, "servers": {name: child_document(p) for name, p in lock.servers.items()}}
    try:
        data = (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        data = (json.dumps(document, sort_keys=True, indent=2) + "\n").encode("ascii")
    try:
        replace_file(path, data)
    except OSError as exc:
        raise LockError(f"cannot write the lock file {path}: {exc.strerror or exc}") from exc


def child_document(pins: ChildPins) -> dict[str, Any]:
    """One child's entry as the lock file holds it (for the shared state too, `hub.state`)."""

    def table(found: Mapping[str, Pin]) -> dict[str, Any]:
        return {n: {"sha256": p.digest, "definition": p.definition} for n, p in found.items()}

    return {"instructions": pins.instructions, "tools": table(pins.tools), "prompts": table(pins.prompts)}


BASE_KEY = "base"  # in a shared approval's document: the digest of the file entry it amends


@dataclass(frozen=True)
class SharedApproval:
    """A child's pins approved on some replica (the shared state), and the digest of the lock file's entry they
    were approved over (None: the file had none)."""

    pins: ChildPins
    base: str | None


def entry_digest(pins: ChildPins | None) -> str | None:
    """The digest of one child's lock-file entry; None for no entry."""
    return None if pins is None else digest(child_document(pins))


def overlay(lock: Lock | None, shared: Mapping[str, SharedApproval]) -> Lock | None:
    """The lock in force: the file's, with the approvals of the shared state (replicas) over it while the file's
    entry is still the one each was approved over. Once the file changes (the approval committed to it, or another
    decision taken), the file wins: an approval in Redis never outlives the file it amended."""
    if not shared:
        return lock
    servers = dict(lock.servers) if lock is not None else {}
    for child, approval in shared.items():
        if entry_digest(servers.get(child)) == approval.base:
            servers[child] = approval.pins
    return Lock(servers)

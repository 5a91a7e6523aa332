"""The shape of hub/ as data: which hub module imports which, the layers docs/architecture.md names, module sizes.

Every import counts, wherever it stands: at the top, under `if TYPE_CHECKING:`, inside a function. An import that
only a type checker sees is still an arrow a reader has to follow, and a cycle hidden that way is still a cycle.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hub"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of hub/, by dotted name."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The hub modules `path` imports, anywhere in it. `from hub.x import y` names hub.x.y when that is a module,
    else hub.x."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in known:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each hub module and the hub modules it imports (a package's __init__ counts as the package)."""
    found = modules()
    known = set(found)
    return {name: imports(path, known) - {name} for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm; hub/ is shallow enough for
    its recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(component) > 1:
                found.append(sorted(component))

    for root in sorted(graph):
        if root not in index:
            visit(root)
    return found


@dataclass(frozen=True)
class Layer:
    name: str
    prefixes: tuple[str, ...]

    def holds(self, module: str) -> bool:
        return any(module == p or module.startswith(p + ".") for p in self.prefixes)


def layers(doc: Path = ARCHITECTURE_DOC) -> list[Layer]:
    """The layers in the ```layers block of docs/architecture.md, from the top one to the bottom one: each line is
    a layer's name and the modules or packages it holds (`app   hub.app, hub.serve`)."""
    text = doc.read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.DOTALL)
    if block is None:
        raise AssertionError(f"{doc} has no ```layers block")
    found = []
    for line in block.group(1).splitlines():
        if line.strip():
            name, _, held = line.strip().partition(" ")
            found.append(Layer(name, tuple(p.strip() for p in held.split(",") if p.strip())))
    return found


def layer_of(module: str, ordered: list[Layer]) -> int | None:
    """The layer's rank (0 is the top) that holds `module`, the most specific prefix winning."""
    best: tuple[int, int] | None = None  # (prefix length, rank)
    for rank, layer in enumerate(ordered):
        for prefix in layer.prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    return None if best is None else best[1]


def upward_arrows(graph: dict[str, set[str]], ordered: list[Layer]) -> list[str]:
    """Every import from a lower layer into a higher one, as 'a (layer) -> b (layer)'."""
    found = []
    for module, imported in sorted(graph.items()):
        own = layer_of(module, ordered)
        for target in sorted(imported):
            theirs = layer_of(target, ordered)
            if own is not None and theirs is not None and theirs < own:
                found.append(f"{module} ({ordered[own].name}) -> {target} ({ordered[theirs].name})")
    return found


def line_counts() -> dict[str, int]:
    return {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}


def class_names() -> dict[str, list[str]]:
    """Each top-level class name (and module-level alias of a class-like name) of hub/, with the modules defining it."""
    found: dict[str, list[str]] = {}
    for name, path in modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(name)
    return found

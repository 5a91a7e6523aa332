"""README's "Layout" names every module of hub/ and nothing that is gone: the map a newcomer reads first."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _listed() -> set[str]:
    """The modules the README's layout block names, as paths under hub/."""
    block = (ROOT / "README.md").read_text().split("```text\nhub/\n", 1)[1].split("```", 1)[0]
    listed: set[str] = set()
    package = None
    for line in block.splitlines():
        found = re.match(r"( *)(\S+)", line)
        if found is None:
            continue
        indent, name = len(found.group(1)), found.group(2)
        if indent == 0:
            break
        if indent == 2:
            package = name.rstrip("/") if name.endswith("/") else None
            if package is None:
                listed.add(name)
        elif indent == 4 and package is not None:
            listed.add(f"{package}/{name}")
    return listed


def _modules() -> set[str]:
    """Every module of hub/ a reader would look for: a package's `__init__` only where it defines something."""
    found = set()
    for path in (ROOT / "hub").rglob("*.py"):
        if path.name == "__main__.py":
            continue
        if path.name == "__init__.py":
            body = ast.parse(path.read_text()).body
            if not any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in body):
                continue
        found.add(path.relative_to(ROOT / "hub").as_posix())
    return found


def test_the_readme_layout_names_every_module_and_no_module_that_is_gone() -> None:
    listed, modules = _listed(), _modules()
    assert not listed - modules, f"README's layout names modules that do not exist: {sorted(listed - modules)}"
    assert not modules - listed, f"README's layout does not name: {sorted(modules - listed)}"

"""Every third-party module hub/ imports is declared in pyproject.toml.

A module imported unconditionally at the top of a hub/ module must be in [project.dependencies]: the hub cannot start
without it. One imported only inside a function, under TYPE_CHECKING, in a try block, or through
`importlib.import_module("name")` may instead be in an extra ([project.optional-dependencies], not `test`). A module
counts as declared when the distribution that installs it is declared, not because another dependency happens to pull
it in (httpx2 was imported by five modules and declared nowhere, reaching the hub only through mcp).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "hub"
# Extras that are not the hub's own (the test suite's tools).
NOT_RUNTIME_EXTRAS = {"test"}


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution name of a requirement string such as `pyjwt[crypto]>=2.8`."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r} in pyproject.toml"
    return normalized(match.group(1))


def declared() -> tuple[set[str], set[str]]:
    """(the distributions in [project.dependencies], those in the runtime extras)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {requirement_name(r) for r in project["dependencies"]}
    extras = {
        requirement_name(r)
        for extra, requirements in project.get("optional-dependencies", {}).items()
        if extra not in NOT_RUNTIME_EXTRAS
        for r in requirements
    }
    return core, extras


def imports(tree: ast.Module) -> Iterator[tuple[str, bool]]:
    """(dotted module, whether the hub needs it to start) for each absolute import in `tree`; `import_module` calls
    with a literal name count as optional imports."""
    required_nodes = {id(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in required_nodes
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, id(node) in required_nodes
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value, False


def third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top != "hub" and top not in sys.stdlib_module_names


@cache
def top_level_owners() -> dict[str, list[str]]:
    """Each installed top-level module -> the distributions that provide it."""
    return metadata.packages_distributions()


@cache
def installed_by(distribution: str) -> frozenset[str]:
    """The paths (relative to site-packages) of the files `distribution` installs."""
    return frozenset(str(file) for file in metadata.distribution(distribution).files or ())


def distributions_of(module: str) -> set[str]:
    """The distributions that install `module`: those owning its deepest installed package or file (a namespace
    package such as `opentelemetry` is shared by many); its own name when it is not installed (an optional one)."""
    parts = module.split(".")
    candidates = top_level_owners().get(parts[0])
    if not candidates:
        return {normalized(parts[0])}
    for depth in range(len(parts), 0, -1):
        path = "/".join(parts[:depth])
        owning = {normalized(name) for name in candidates if {f"{path}.py", f"{path}/__init__.py"} & installed_by(name)}
        if owning:
            return owning
    return {normalized(name) for name in candidates}


def hub_imports() -> dict[str, tuple[bool, list[str]]]:
    """Each third-party module hub/ imports -> (whether the hub needs it to start, the files importing it)."""
    found: dict[str, tuple[bool, list[str]]] = {}
    for path in sorted(HUB.rglob("*.py")):
        for module, required in imports(ast.parse(path.read_text(), str(path))):
            if third_party(module):
                was_required, files = found.get(module, (False, []))
                found[module] = (was_required or required, [*files, str(path.relative_to(ROOT))])
    return found


def test_every_third_party_module_hub_imports_is_declared_by_the_distribution_that_installs_it() -> None:
    core, extras = declared()
    missing = []
    for module, (required, files) in sorted(hub_imports().items()):
        distributions = distributions_of(module)
        allowed = core if required else core | extras
        if not distributions & allowed:
            where = "[project.dependencies]" if required else "[project.dependencies] or a runtime extra"
            missing.append(f"{module} (from {', '.join(sorted(distributions))}; {files[0]}) is not in {where}")
    assert not missing, "\n".join(missing)


def test_the_walk_sees_imports_inside_functions_and_import_module_calls() -> None:
    """The check above would pass vacuously if the walk missed the imports it exists for."""
    found = hub_imports()
    assert found["httpx2"][0], "hub.upstream.oauth_refresh imports httpx2 at its top"
    assert "mcp_types" in found or "mcp_types.methods" in found, "hub.protocol.revisions imports it in a function"
    assert "keyring" in found and not found["keyring"][0], "hub.connect.token loads keyring through import_module"
    assert distributions_of("opentelemetry.sdk.trace") == {"opentelemetry-sdk"}
    assert distributions_of("yaml") == {"pyyaml"}

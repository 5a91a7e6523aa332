"""docs/protocols.md, "Every method, notification and capability": one row for each, with one verdict.

The names come from the SDK's own types (`mcp.types`: every request and notification class, and the per-revision
method maps of `mcp.types.methods`) and its capability models, plus the two extensions' specifications, which the SDK
does not model (hard-coded below, with where each list comes from). A method the SDK or those specifications define
and the page does not name fails here; so does a name on the page that none of them defines, a name given twice, and
a row whose verdict is not exactly one of relays / bridges / answers / refuses.
"""

from __future__ import annotations

import inspect
import re

import mcp.types as types
from mcp.types import methods

from tests.support.paths import REPO

PAGE = REPO / "docs" / "protocols.md"
SECTION = "## Every method, notification and capability"
VERDICTS = {"**relays**", "**bridges**", "**answers**", "**refuses**"}
# The two revisions the page covers: the handshake era's latest and the stateless one (the `rev.` column's tokens).
ERAS = {"2025-11-25": "25", "2026-07-28": "26"}

# The tasks extension (io.modelcontextprotocol/tasks): modelcontextprotocol/modelcontextprotocol,
# seps/2663-tasks-extension.md, "Abstract" ("three methods: `tasks/get`, `tasks/update`, and `tasks/cancel`") and
# "Task Status Notifications" (`notifications/tasks`).
TASKS_EXTENSION = {"tasks/get", "tasks/update", "tasks/cancel", "notifications/tasks"}
# MCP Apps (io.modelcontextprotocol/ui): modelcontextprotocol/ext-apps, specification/draft/apps.mdx, "Standard MCP
# Messages" (the `ui/initialize` handshake), "MCP Apps Specific Messages" (requests view → host, host → view,
# notifications both ways) and "Reserved Messages (Sandbox Proxy)".
UI_EXTENSION = {
    "ui/initialize",
    "ui/notifications/initialized",
    "ui/open-link",
    "ui/download-file",
    "ui/message",
    "ui/request-display-mode",
    "ui/update-model-context",
    "ui/resource-teardown",
    "ui/notifications/tool-input",
    "ui/notifications/tool-input-partial",
    "ui/notifications/tool-result",
    "ui/notifications/tool-cancelled",
    "ui/notifications/host-context-changed",
    "ui/notifications/size-changed",
    "ui/notifications/request-teardown",
    "ui/notifications/sandbox-proxy-ready",
    "ui/notifications/sandbox-resource-ready",
}
EXTENSIONS = {"io.modelcontextprotocol/tasks", "io.modelcontextprotocol/ui"}
# The per-revision maps of `mcp.types.methods`, keyed (method, version).
REVISION_MAPS = (
    methods.CLIENT_REQUESTS,
    methods.CLIENT_NOTIFICATIONS,
    methods.SERVER_REQUESTS,
    methods.SERVER_NOTIFICATIONS,
)


def sdk_methods() -> set[str]:
    """Every method and notification name the SDK defines: each `Request` / `Notification` class's `method`
    literal, and every method of the per-revision maps for the two revisions."""
    found: set[str] = set()
    for _, cls in inspect.getmembers(types, inspect.isclass):
        if issubclass(cls, (types.Request, types.Notification)) and "method" in cls.model_fields:
            default = cls.model_fields["method"].default
            if isinstance(default, str):
                found.add(default)
    for surface in REVISION_MAPS:
        found.update(method for method, version in surface if version in ERAS)
    return found


def sdk_capabilities() -> set[str]:
    """`client.<field>` and `server.<field>` for each capability the SDK's capability models have (wire names)."""
    found: set[str] = set()
    for side, model in (("client", types.ClientCapabilities), ("server", types.ServerCapabilities)):
        found.update(f"{side}.{field.alias or name}" for name, field in model.model_fields.items())
    return found


def rows() -> list[list[str]]:
    """The cells of each row of the section's tables (header and separator rows left out)."""
    lines = PAGE.read_text().splitlines()
    start = lines.index(SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    found = []
    for line in lines[start + 1 : end]:
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if set(cells[0]) <= {"-"} or cells[-1] == "why":
            continue
        found.append(cells)
    return found


def named() -> dict[str, list[str]]:
    """Each name in a row's first cell (in backticks) -> that row's cells; a name given twice fails here."""
    found: dict[str, list[str]] = {}
    for cells in rows():
        for name in re.findall(r"`([^`]+)`", cells[0]):
            assert name not in found, f"{name!r} has more than one row in {PAGE.name}"
            found[name] = cells
    return found


def test_the_sdk_gives_the_names_this_test_checks() -> None:
    """The extraction finds the methods of both revisions (so the test below cannot pass on an empty list)."""
    names = sdk_methods()
    assert {"initialize", "tools/call", "tasks/result", "notifications/tasks/status"} <= names
    assert {"server/discover", "subscriptions/listen", "notifications/subscriptions/acknowledged"} <= names
    assert len(names) >= 30
    assert {"client.extensions", "server.tasks", "client.roots", "server.logging"} <= sdk_capabilities()


def test_every_method_and_notification_of_the_sdk_has_a_row() -> None:
    missing = sorted(sdk_methods() - named().keys())
    assert not missing, f"{PAGE.name} has no row for {missing}"


def test_every_method_and_notification_of_the_extensions_has_a_row() -> None:
    missing = sorted((TASKS_EXTENSION | UI_EXTENSION) - named().keys())
    assert not missing, f"{PAGE.name} has no row for {missing}"


def test_every_capability_has_a_row() -> None:
    missing = sorted((sdk_capabilities() | EXTENSIONS) - named().keys())
    assert not missing, f"{PAGE.name} has no row for {missing}"


def test_every_method_row_names_a_method_that_exists() -> None:
    """A row for a method or notification nobody defines (a typo, a method since renamed) is not a row for the
    real one."""
    known = sdk_methods() | TASKS_EXTENSION | UI_EXTENSION
    shaped = [name for name in named() if re.fullmatch(r"[a-z]+(/[a-zA-Z_-]+)+", name)]
    unknown = sorted(set(shaped) - known)
    assert not unknown, f"{PAGE.name} has rows for methods that no revision or extension defines: {unknown}"


def test_every_row_has_exactly_one_verdict_and_a_reason() -> None:
    for cells in rows():
        assert len(cells) == 5, f"row {cells[0]} has {len(cells)} cells, not 5"
        assert cells[3] in VERDICTS, f"row {cells[0]}: verdict {cells[3]!r} is not one of {sorted(VERDICTS)}"
        assert len(cells[4].split()) >= 3, f"row {cells[0]} does not say why"


def test_each_method_row_names_the_revisions_that_define_it() -> None:
    """A method the SDK maps to a revision has that revision in its row's `rev.` column."""
    table = named()
    for surface in REVISION_MAPS:
        for method, version in surface:
            if version in ERAS:
                token = ERAS[version]
                assert token in table[method][1].split(), f"row {method}: `rev.` does not say {token} ({version})"

"""The architecture holds by test: no import cycle among hub/'s modules (not even under TYPE_CHECKING or inside a
function), no arrow from a lower layer of docs/architecture.md to a higher one, every module in a layer, no module
over MODULE_LINES lines, and one class per name."""

from __future__ import annotations

from tests import architecture

# The most lines a module of hub/ may have: a module is read in one sitting.
MODULE_LINES = 500


def test_no_import_cycle() -> None:
    assert architecture.cycles(architecture.import_graph()) == []


def test_no_arrow_points_up_the_layers() -> None:
    assert architecture.upward_arrows(architecture.import_graph(), architecture.layers()) == []


def test_every_module_is_in_a_layer() -> None:
    ordered = architecture.layers()
    assert [m for m in architecture.modules() if architecture.layer_of(m, ordered) is None] == []


def test_no_module_is_longer_than_one_sitting() -> None:
    assert {name: n for name, n in architecture.line_counts().items() if n > MODULE_LINES} == {}


def test_class_names_are_unique() -> None:
    assert {name: held for name, held in architecture.class_names().items() if len(held) > 1} == {}


def test_the_checks_see_what_they_check() -> None:
    """The graph is hub/'s, with its arrows: a check over an empty or arrowless graph would pass for any code."""
    graph = architecture.import_graph()
    assert "hub.app" in graph and "hub.relay.router" in graph["hub.app"]
    assert architecture.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    layers = [architecture.Layer("top", ("hub.top",)), architecture.Layer("low", ("hub.low",))]
    assert architecture.upward_arrows({"hub.low.x": {"hub.top.y"}, "hub.top.y": {"hub.low.x"}}, layers) == [
        "hub.low.x (low) -> hub.top.y (top)"
    ]

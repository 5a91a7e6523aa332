"""Finding tools by what they do: BM25 over each tool's name, title, description and parameter text.

A host whose servers are behind `exposure: search` (or `hybrid`) sees `hub_search_tools(query, limit)` instead of
their tools; it returns full definitions, which the host then calls through `hub_call_tool` (or by name). The
index is built once per namespace, over every routed tool; each search keeps only what the caller's policy shows,
so search and listing obey one predicate.

Tokens: names and text split on anything that is not a letter or a digit, camelCase split, lowercased, with a plain
suffix strip (plurals, `-ing`, `-ed`) so that "listing hosts" finds `list_host`. A tool's name counts three
times: a query word in the name is the strongest sign.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

K1 = 1.2
B = 0.75
NAME_WEIGHT = 3
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOP = frozenset({"a", "an", "the", "of", "to", "and", "or", "for", "in", "on", "with", "by", "is", "it", "me", "my"})


def _stem(word: str) -> str:
    """A plain English suffix strip (plural, -ing, -ed): enough for tool names and one-line descriptions."""
    if len(word) <= 3:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    return word


def tokens(text: str) -> list[str]:
    """The words of `text` as the index and the queries see them."""
    words = []
    for chunk in _WORD.findall(text):
        for part in _CAMEL.split(chunk):
            word = part.lower()
            if word and word not in _STOP:
                words.append(_stem(word))
    return words


def _parameter_text(schema: Any, depth: int = 0) -> Iterable[str]:
    """Parameter names and descriptions of an input schema (nested objects too, to a bounded depth)."""
    if not isinstance(schema, dict) or depth > 4:
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            yield str(name)
            if isinstance(spec, dict):
                description = spec.get("description")
                if isinstance(description, str):
                    yield description
                yield from _parameter_text(spec, depth + 1)


def document(tool: dict[str, Any]) -> list[str]:
    """The words a tool is found by."""
    name = str(tool.get("name", ""))
    text = [str(tool.get(k)) for k in ("title", "description") if isinstance(tool.get(k), str)]
    text += _parameter_text(tool.get("inputSchema"))
    return tokens(name) * NAME_WEIGHT + tokens(" ".join(text))


class ToolIndex:
    """BM25 over a fixed list of tools (the namespace's), searched with a filter (the caller's policy)."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self._tools = list(tools)
        self._counts = [Counter(document(t)) for t in self._tools]
        self._lengths = [sum(c.values()) for c in self._counts]
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for counts in self._counts:
            frequency.update(counts.keys())
        n = len(self._tools)
        self._idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}

    def search(self, query: str, limit: int, allowed: Callable[[str], bool]) -> list[dict[str, Any]]:
        """The `limit` best tools for `query` among those `allowed` (by exposed name), best first; ties keep the
        namespace's order, so results are stable."""
        words = set(tokens(query))
        scored = []
        for position, (tool, counts, length) in enumerate(zip(self._tools, self._counts, self._lengths, strict=True)):
            score = 0.0
            for word in words:
                f = counts.get(word, 0)
                if f:
                    norm = K1 * (1 - B + B * length / self._average) if self._average else K1
                    score += self._idf[word] * f * (K1 + 1) / (f + norm)
            if score > 0 and allowed(str(tool.get("name", ""))):
                scored.append((-score, position, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [tool for _, _, tool in scored[:limit]]

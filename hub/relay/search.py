"""Finding tools by what they do (`hub_search_tools`, for servers behind `exposure: search` or `hybrid`): BM25F over
each tool's name, title and description, parameter names and parameter descriptions, weighed by FIELD_WEIGHTS.
Words are split on non-alphanumerics and camelCase, lowercased, stop words dropped and lightly stemmed, so that
"listing hosts", "list_host" and "listHosts" meet; a short synonym table adds the words tool definitions use for
what users say, at a lower weight. The index is built once per namespace over every routed tool, and each search
keeps what the caller's policy shows. Why it is built so: docs/decisions/020-search-ranking.md; its figures:
bench/search_eval.py.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

K1 = 1.2
B = 0.75
FIELD_WEIGHTS = {"name": 3.0, "text": 1.5, "params": 0.6, "param_text": 0.3}
SYNONYM_WEIGHT = 0.5
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_STOP_WORDS = (
    "a an the of to and or for in on at from into with by is are be it its me my i you your this that these those "
    "what which who how do does can could please some all any there here"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
# What users say -> what tool definitions say: a key of one word is matched after `_stem`, a key of several as a
# phrase of the query; the words of its value are added to the query at SYNONYM_WEIGHT. Small on purpose: each
# entry bridges a gap that a tuning query of the bench showed (decision 020).
_SYNONYMS = {
    "folder": "directory",
    "pr": "pull request",
    "repo": "repository",
    "bug": "issue",
    "report": "create issue",
    "find": "search",
    "picture": "image",
    "photo": "image",
    "what time": "current",
    "time difference": "convert",
    "how far": "distance",
    "uncommitted": "unstaged status",
    "cache": "set",
    "ttl": "expiration",
    "far": "distance",
    "remember": "add observation entity",
    "forget": "delete entity",
    "know": "search node graph",
    "download": "fetch url",
    "web": "url internet",
    "page": "url",
    "open": "navigate",
    "javascript": "evaluate",
    "changed": "log diff",
    "am": "current",
    "latitude": "geocode coordinate",
    "longitude": "geocode coordinate",
    "altitude": "elevation",
    "rename": "move",
}


def _stem(word: str) -> str:
    """A light English suffix strip (plural, -ing, -ed, final e): enough for tool names and one-line descriptions."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """The words of `text` as the index and the queries see them."""
    words = (part.lower() for chunk in _WORD.findall(text) for part in _CAMEL.split(chunk))
    return [_stem(word) for word in words if word and word not in _STOP]


_SYNONYM_WORDS = {_stem(k): tokens(v) for k, v in _SYNONYMS.items() if " " not in k}
_SYNONYM_PHRASES = [(re.compile(rf"\b{re.escape(k)}\b"), tokens(v)) for k, v in _SYNONYMS.items() if " " in k]


def query_weights(query: str) -> dict[str, float]:
    """Each word of the query with its weight: 1 for the query's own, SYNONYM_WEIGHT for a word the table adds."""
    weights = dict.fromkeys(tokens(query), 1.0)
    added = [w for word in weights for w in _SYNONYM_WORDS.get(word, ())]
    added += [w for phrase, extra in _SYNONYM_PHRASES if phrase.search(query.lower()) for w in extra]
    for word in added:
        weights.setdefault(word, SYNONYM_WEIGHT)
    return weights


def _parameters(schema: Any, depth: int = 0) -> Iterable[tuple[str, str]]:
    """(name, description) of each parameter of an input schema (nested objects too, to a bounded depth)."""
    if not isinstance(schema, dict) or depth > 4:
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            description = spec.get("description") if isinstance(spec, dict) else None
            yield str(name), description if isinstance(description, str) else ""
            yield from _parameters(spec, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _parameters(items, depth + 1)


def fields(tool: dict[str, Any]) -> dict[str, list[str]]:
    """The words a tool is found by, field by field (the keys of FIELD_WEIGHTS)."""
    text = " ".join(str(tool[k]) for k in ("title", "description") if isinstance(tool.get(k), str))
    parameters = list(_parameters(tool.get("inputSchema")))
    return {
        "name": tokens(str(tool.get("name", ""))),
        "text": tokens(text),
        "params": tokens(" ".join(name for name, _ in parameters)),
        "param_text": tokens(" ".join(description for _, description in parameters)),
    }


class ToolIndex:
    """BM25F over a fixed list of tools (the namespace's), searched with a filter (the caller's policy)."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self._tools = list(tools)
        per_tool = [fields(t) for t in self._tools]
        self._counts = [{f: Counter(words) for f, words in doc.items()} for doc in per_tool]
        n = len(self._tools)
        self._average = {f: (sum(len(doc[f]) for doc in per_tool) / n if n else 0.0) or 1.0 for f in FIELD_WEIGHTS}
        self._lengths = [{f: len(words) for f, words in doc.items()} for doc in per_tool]
        frequency: Counter[str] = Counter()
        for doc in per_tool:
            frequency.update({w for words in doc.values() for w in words})
        self._idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}

    def _score(self, position: int, weights: dict[str, float]) -> float:
        counts, lengths = self._counts[position], self._lengths[position]
        score = 0.0
        for word, weight in weights.items():
            if word not in self._idf:
                continue
            tf = 0.0
            for field, field_weight in FIELD_WEIGHTS.items():
                f = counts[field].get(word, 0)
                if f:
                    tf += field_weight * f / (1 - B + B * lengths[field] / self._average[field])
            if tf:
                score += weight * self._idf[word] * tf / (K1 + tf)
        return score

    def search(self, query: str, limit: int, allowed: Callable[[str], bool]) -> list[dict[str, Any]]:
        """The `limit` best tools for `query` among those `allowed` (by exposed name), best first; ties keep the
        namespace's order, so results are stable."""
        weights = query_weights(query)
        scored = []
        for position, tool in enumerate(self._tools):
            score = self._score(position, weights)
            if score > 0 and allowed(str(tool.get("name", ""))):
                scored.append((-score, position, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [tool for _, _, tool in scored[:limit]]

"""How many tokens a text costs a model: tiktoken's `cl100k_base` when that optional package is installed and its
encoding is cached on disk, else the UTF-8 size divided by four. tiktoken would fetch an encoding it has not cached
from the network, synchronously and without a timeout: the hub uses it only if its file is in tiktoken's cache.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable

ENCODING = "cl100k_base"
_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
ESTIMATE = "estimate: bytes / 4"


def counter() -> tuple[Callable[[str], int], str]:
    """A token counter and its name."""
    if _cached():
        try:
            tiktoken = importlib.import_module("tiktoken")  # optional, and without type stubs
            encoding = tiktoken.get_encoding(ENCODING)
            return (lambda text: len(encoding.encode(text))), f"tiktoken {ENCODING}"
        except Exception:  # not installed, or a cache it will not read
            pass
    return (lambda text: (len(text.encode()) + 3) // 4), ESTIMATE


def _cached() -> bool:
    directory = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if directory is None:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not directory:
        return False  # caching turned off: every use would fetch
    return os.path.exists(os.path.join(directory, hashlib.sha1(_URL.encode()).hexdigest()))

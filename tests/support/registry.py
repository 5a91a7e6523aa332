"""A local MCP Registry for tests: real published server.json documents (tests/fixtures/registry/) served over HTTP
the way https://registry.modelcontextprotocol.io answers, and an offline `uvx` for the PyPI servers they name.

- `GET /v0/servers/{name}/versions/{version}` (`latest` or the document's version): `{"server": ..., "_meta": ...}`,
  else 404 `{"error": ...}`;
- `GET /v0/servers?search=TEXT`: `{"servers": [...], "metadata": {"count": N}}`, the names containing TEXT.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "registry"
OFFICIAL = "io.modelcontextprotocol.registry/official"


def documents() -> dict[str, dict[str, Any]]:
    """The fixtures' server.json documents by server name."""
    found = (json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*.json")))
    return {document["name"]: document for document in found}


def _answer(document: dict[str, Any]) -> dict[str, Any]:
    meta = {"status": "active", "isLatest": True, "publishedAt": "2025-12-11T00:00:00Z"}
    return {"server": document, "_meta": {OFFICIAL: meta}}


class _Handler(BaseHTTPRequestHandler):
    servers: dict[str, dict[str, Any]] = {}
    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")]
        if parts[1:3] == ["v0", "servers"] and len(parts) == 3:
            text = urllib.parse.parse_qs(url.query).get("search", [""])[0]
            rows = [_answer(d) for name, d in self.servers.items() if text in name]
            self._send(200, {"servers": rows, "metadata": {"count": len(rows)}})
            return
        if parts[1:3] == ["v0", "servers"] and len(parts) == 6 and parts[4] == "versions":
            document = self.servers.get(parts[3])
            if document is not None and parts[5] in ("latest", document.get("version")):
                self._send(200, _answer(document))
                return
        self._send(404, {"error": "Server not found"})

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def fixture_registry() -> Iterator[tuple[str, list[str]]]:
    """A registry on a free loopback port: its base URL, and the paths it was asked for."""
    seen: list[str] = []
    handler = type("Handler", (_Handler,), {"servers": documents(), "seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


UVX = '''#!{python}
"""uvx, offline, for tests: `uvx [OPTIONS] NAME[==VERSION] ARGS...` runs NAME's console script installed beside
this Python (the version pinned is not fetched: the installed one runs)."""
import os, re, sys
from pathlib import Path

words = sys.argv[1:]
while words and words[0].startswith("-"):
    words = words[2:] if words[0] in ("--from", "--with", "--python") else words[1:]
name = re.split(r"[=<>!~\\[@]", words[0])[0]
script = Path({bin!r}) / name
os.execv(str(script), [str(script), *words[1:]])
'''


def offline_uvx(directory: Path) -> Path:
    """A directory holding an offline `uvx` (put it first on PATH); the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    uvx = directory / "uvx"
    uvx.write_text(UVX.format(python=sys.executable, bin=str(Path(sys.executable).parent)))
    uvx.chmod(0o755)
    return directory

"""A stand-in `keyring` package on disk, for the processes a test starts (`hub connect --keyring`, `hub install
--keyring`): the optional package is not a test dependency, and a test must not touch the machine's real keyring."""

from __future__ import annotations

import json
from pathlib import Path


def keyring_package(directory: Path, entries: dict[str, str]) -> dict[str, str]:
    """Lay out the package under `directory` with `entries` ("service:user" -> token) in a JSON file beside it; the
    environment variables that make a process import it (and read that file)."""
    package = directory / "fake" / "keyring"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(
        "import json, os\n"
        "def get_password(service, user):\n"
        "    return json.loads(open(os.environ['FAKE_KEYRING']).read()).get(service + ':' + user)\n"
    )
    (package / "errors.py").write_text("class KeyringError(Exception):\n    pass\n")
    store = directory / "keyring.json"
    store.write_text(json.dumps(entries))
    return {"PYTHONPATH": str(package.parent), "FAKE_KEYRING": str(store)}

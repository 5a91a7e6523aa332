"""Reading servers.yaml again for a reload (a file change, SIGHUP, `hub reload`, POST /reload).

The new file is validated exactly as at start. It is refused (logged `config_rejected`, the running configuration
kept) when it is invalid, or when it drops `auth:` while the hub serves HTTP beyond loopback with it: a reload must
not open a protected hub to anyone who can reach it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import structlog

from hub.config.loader import ConfigError, load_config
from hub.config.schema import LoadedConfig


async def reread(path: Path, auth_required: bool, reason: str) -> LoadedConfig | None:
    """The configuration at `path` read and checked again (off the event loop); None if it is refused."""
    log = structlog.get_logger("hub")
    try:
        loaded = await anyio.to_thread.run_sync(load_config, path)
    except ConfigError as exc:
        log.error("config_rejected", reason=reason, error=str(exc), kept=str(path))
        return None
    if auth_required and loaded.config.auth is None:
        why = "the hub serves HTTP beyond loopback with auth: and the new file has no 'auth:'; restart it to drop auth"
        log.error("config_rejected", reason=reason, error=why, kept=str(path))
        return None
    log.info("config_reload", reason=reason)
    return loaded

"""Where servers.yaml is, one rule for every command (and `hub install`, which writes it into a host's entry); and
where the desktop's call log goes when servers.yaml names none (`default_log_path`).

Named (--config, $HUB_CONFIG): that one. Else `./servers.yaml` if it exists, else `servers.yaml` in the user's
config directory as the system has it (platformdirs: ~/.config/hub on Linux, ~/Library/Application Support/hub on
macOS, %LOCALAPPDATA%\\hub on Windows).
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CONFIG = "servers.yaml"


def config_path(given: str | None) -> tuple[str, str | None]:
    """The config file to read; and, when none was named and none is found, the error that says where it was looked
    for (the path is then the user config directory's, where `hub import` creates one)."""
    if given is not None:
        return given, None
    if os.path.exists(DEFAULT_CONFIG):
        return DEFAULT_CONFIG, None
    import platformdirs

    user = os.path.join(platformdirs.user_config_dir("hub", appauthor=False), DEFAULT_CONFIG)
    if os.path.exists(user):
        return user, None
    here = os.path.join(".", DEFAULT_CONFIG)
    return user, (
        f"no such file: neither {here} nor {user} exists; `hub init` writes a first {here} (or create one of "
        "them, or pass --config PATH, or set HUB_CONFIG; see docs/configuration.md)"
    )


def default_log_path() -> Path:
    """The call log of `hub serve` on stdio when `hub.log_file` is not set: `hub.log` in the user's log directory as
    the system has it (platformdirs: $XDG_STATE_HOME/hub/log, else ~/.local/state/hub/log, on Linux;
    ~/Library/Logs/hub on macOS; %LOCALAPPDATA%\\hub\\Logs on Windows). `hub logs` reads it by default."""
    import platformdirs

    return Path(platformdirs.user_log_dir("hub", appauthor=False)) / "hub.log"

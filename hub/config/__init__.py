"""`servers.yaml`: its schema (`schema`), its reading and error messages (`loader`), `${VAR}` (`expansion`)."""

from hub.config.loader import ConfigError, load_config, parse_config
from hub.config.schema import HubConfig, HubSettings, LoadedConfig, ServerConfig, ToolFilter

__all__ = [
    "ConfigError",
    "HubConfig",
    "HubSettings",
    "LoadedConfig",
    "ServerConfig",
    "ToolFilter",
    "load_config",
    "parse_config",
]

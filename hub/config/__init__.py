"""`servers.yaml`: its schema (`schema`), its reading and error messages (`loader`), `${VAR}` (`expansion`)."""

from hub.config.loader import ConfigError, load_config, parse_config
from hub.config.schema import HubConfig, LoadedConfig, ServerConfig, ToolFilter
from hub.config.settings import HubSettings

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

"""hub: one MCP entry for the host, many MCP servers behind it."""

__version__ = "0.1.0"

__all__ = ["__version__"]

"""What every section of the `servers.yaml` schema shares: the model base, and the words a server and the hub both set.

Frozen pydantic models with `extra="forbid"`, so that a misspelt key is an error (hub/config/loader.py turns it into
a message naming the file, the line and the closest allowed key) and a loaded configuration is never changed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# How a child's text results reach the host: as sent, or wrapped as untrusted data (hub.relay.boundary).
OutputMode = Literal["none", "wrap"]
# What a host's tools/list shows of a child's tools: all of them; none, found through the hub's search tool
# (hub.relay.search); or the search plus the tools named in `always_visible`.
ExposureMode = Literal["full", "search", "hybrid"]


class Strict(BaseModel):
    """Unknown keys refused; frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

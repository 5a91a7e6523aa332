"""What the host fronts (stdio, Streamable HTTP, the in-process host) use of the hub: `HubPort`, one narrow interface.

The fronts do not import the application (`hub.app`): they are handed something that satisfies `HubPort` (the
`Hub`). A member that a front does not use has no place here; one it needs is added here and to `hub.app.Hub`:
as the owning part's own method, assigned in `Hub.__init__`, or in the block at the end of the class.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hub.access.hidden import Explanation
from hub.access.identity import Identity
from hub.access.policy import View
from hub.config.access import AuthConfig
from hub.config.settings import HubSettings
from hub.observe.recent import Recent
from hub.relay.catalog import Namespace
from hub.relay.hosts import Listener, Session
from hub.relay.ports import HostRequest
from hub.upstream.child import Child
from hub.upstream.oauth import Credentials
from hub.upstream.startup import StartupWait

if TYPE_CHECKING:  # prometheus_client, which it loads, is for the HTTP front's start-up alone (hub.app)
    from hub.observe.metrics import Metrics


class HostRegistry(Protocol):
    """Where a front registers what gets the hub's notifications outside a request (`hub.relay.hosts.Hosts`)."""

    def add(self, session: Session) -> None:
        """A handshake-era session was initialized: it gets list_changed, log messages and the children's asks."""

    def listen(self, listener: Listener) -> None:
        """A 2026-07-28 listen stream started: its resource subscriptions reach the children."""

    def unlisten(self, listener: Listener) -> None: ...


class HubPort(Protocol):
    """The hub as the host fronts see it; the settings and the configuration as they are now (a reload replaces
    them)."""

    @property
    def settings(self) -> HubSettings: ...

    @property
    def auth_config(self) -> AuthConfig | None:
        """The `auth:` section; None: every caller is anonymous."""

    @property
    def token_path(self) -> Path | None: ...

    @property
    def local(self) -> Identity:
        """Who a stdio host and the in-process host act for."""

    @property
    def replica(self) -> str:
        """This process's name among replicas: it leads HTTP session ids."""

    @property
    def stateless(self) -> bool:
        """`hub serve --http --stateless`: every request on its own, no sessions."""

    @property
    def draining(self) -> bool:
        """Stopping: no new sessions, /readyz 503."""

    @property
    def oauth(self) -> Credentials | None:
        """OAuth children's sign-ins; None when no child signs in with OAuth (or the hub is not running)."""

    @property
    def metrics(self) -> Metrics | None:
        """None unless the hub was built for the HTTP front."""

    @property
    def recent(self) -> Recent | None:
        """The status page's recent calls; None unless the hub was built for the HTTP front."""

    def record_listing(self, method: str, began: float, explanation: Explanation | None = None) -> None:
        """A listing was answered; `began` is its arrival (`time.perf_counter()`); `explanation`: what the policy
        hid from the session's identity in it."""

    @property
    def namespace(self) -> Namespace: ...

    @property
    def children(self) -> Mapping[str, Child]: ...

    def view(self, identity: Identity) -> View: ...

    def instructions(self, view: View) -> str: ...

    def builtin_tools(self) -> tuple[dict[str, Any], ...]: ...

    @property
    def startup(self) -> StartupWait:
        """How long a listing may still wait for the children started with the hub (`left`, `wait`)."""

    def route(self, request: HostRequest) -> None:
        """Carry a routed request (`hub.relay.router.ROUTED`) to its one answer."""

    def cancel(self, session: object, request_id: Any, reason: str | None) -> bool:
        """A host cancelled one of its requests; whether one was in flight."""

    def spawn(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run `func(*args)` in the hub's task group, bounded by the hub's life."""

    async def set_log_level(self, level: str, owner: object | None = None) -> None:
        """Every child (or, with `owner`, that session's own connections) gets the level."""

    async def use_nonce(self, key: str, until: float) -> bool:
        """Whether a single-use `key` (good until `until`, epoch seconds) is used here for the first time."""

    def redact(self, value: Any) -> Any:
        """`value` with every known secret replaced, as the call log writes it."""

    @property
    def hosts(self) -> HostRegistry: ...

    def session_ended(self, owner: object) -> None:
        """A host session ended: its own connections and subscriptions end."""

    def roots_changed(self, owner: object | None = None) -> None:
        """A host's roots changed: the children ask for them again."""

    def health(self) -> dict[str, Any]:
        """What hub_health answers: version, uptime, every child's state."""

    def readiness(self) -> tuple[bool, dict[str, str]]:
        """Whether a balancer may send new sessions here, and each child's state."""

    async def reload_from_disk(self, reason: str) -> dict[str, list[str]] | None:
        """Re-read servers.yaml and apply it; what changed, or None if the new file was rejected."""

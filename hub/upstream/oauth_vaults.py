"""Where OAuth children's sign-ins are kept. Here, in upstream, so that the shared state knows nothing of OAuth."""

from __future__ import annotations

from pathlib import Path

from hub.config.schema import StateConfig
from hub.state import RedisState, SharedState
from hub.upstream.oauth import Credentials, FileVault


def oauth_credentials(config: StateConfig, base: Path, shared: SharedState) -> Credentials:
    """Where OAuth children's sign-ins are kept: in Redis with `backend: redis` (sealed under the shared key, so
    that every replica reads them), else in files under `oauth_dir` (default: the user's state directory), sealed
    under `state.key` or, without one, a key kept beside them."""
    if isinstance(shared, RedisState):
        return Credentials(shared, shared.seal_key)
    if config.oauth_dir is not None:
        directory = base / Path(config.oauth_dir).expanduser()
    else:
        import platformdirs

        directory = Path(platformdirs.user_state_dir("hub", appauthor=False)) / "oauth"
    files = FileVault(directory)
    given = config.key

    async def key() -> bytes:
        return given.encode() if given else files.key()

    return Credentials(files, key)

"""The hub on the Kubernetes example's own configuration, laid out on disk exactly as the kubelet lays out the
ConfigMap and Secret volumes (a timestamped directory, `..data` a symlink to it, each key a symlink through it), with
the Deployment's own arguments: its probes answer, the image's HEALTHCHECK command works, a person's token reaches
the example's tools, and updates of the volumes (the kubelet's atomic swap of `..data`) reach the running hub
without a restart. Real processes (`hub serve --http` on loopback, its child): the integration suite.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from hub.access.tokens import TokenFile
from tests.deploy.artifacts import SECRETS_MOUNT, container, dockerfile, kubelet_volume, servers_yaml
from tests.support.logs import wait_for_log
from tests.support.mcp_client import initialize_request
from tests.support.processes import serve_hub_http
from tests.support.system import free_port
from tests.support.waits import WAIT

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TOOLS = {"time_get_current_time", "time_convert_time"}


class Volumes:
    """/etc/hub and /run/secrets/hub of one pod, under a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.config_dir = root / "etc-hub"
        self.secrets_dir = root / "run-secrets-hub"
        self.scratch = TokenFile(root / "scratch" / "tokens.json")  # where `hub token create` writes, before upload
        self.updates = 0
        self.alice = self.scratch.create("alice", ("team",))
        self.put_secret()
        self.put_config(servers_yaml())

    @property
    def config(self) -> Path:
        return self.config_dir / "servers.yaml"

    def _stamp(self) -> str:
        self.updates += 1
        return f"..2026_01_01_00_00_{self.updates:02d}.000000001"

    def put_config(self, text: str) -> None:
        """`kubectl apply` of the ConfigMap, as it reaches the pod's volume."""
        kubelet_volume(
            self.config_dir, {"servers.yaml": text.replace(SECRETS_MOUNT, str(self.secrets_dir))}, self._stamp()
        )

    def put_secret(self) -> None:
        """`kubectl create secret generic hub-secrets --from-file=tokens.json`, as it reaches the pod's volume."""
        kubelet_volume(self.secrets_dir, {"tokens.json": self.scratch.path.read_bytes()}, self._stamp())


def deployment_extra_args() -> list[str]:
    """The Deployment's arguments beyond the image's CMD (`--allow-host ...`)."""
    cmd = dockerfile().stages[-1].last("CMD").exec_form()
    args: list[str] = container()["args"]
    return args[len(cmd) :]


@asynccontextmanager
async def pod(volumes: Volumes, log: Path) -> AsyncIterator[str]:
    """The container's command on loopback (the tests' serve helper binds 127.0.0.1, so the --http differs)."""
    async with serve_hub_http(volumes.config, log, *deployment_extra_args(), port=free_port()) as url:
        yield url.removesuffix("/mcp")


async def wait_ready(base: str) -> None:
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        with anyio.fail_after(WAIT):
            while (await http.get(f"{base}/readyz")).status_code != 200:  # noqa: ASYNC110 - another process; no event
                await anyio.sleep(0.1)


async def tools_of(base: str, token: str) -> set[str]:
    """A new session of `token`'s holder lists the tools."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy", read_timeout_seconds=WAIT) as c,
    ):
        return {t.name for t in (await c.list_tools()).tools}


def healthcheck(port: int) -> int:
    """The image's HEALTHCHECK command, run as Docker runs it (for the port the test hub serves)."""
    command = dockerfile().stages[-1].last("HEALTHCHECK").exec_form()
    command = [part.replace("127.0.0.1:8080", f"127.0.0.1:{port}") for part in command]
    return subprocess.run(command, capture_output=True, timeout=30, check=False).returncode


async def test_the_example_configuration_serves_the_deployment_s_probes_and_a_person_s_token(tmp_path: Path) -> None:
    volumes = Volumes(tmp_path)
    async with pod(volumes, tmp_path / "hub.log") as base:
        port = int(base.rpartition(":")[2])
        await wait_ready(base)
        async with httpx2.AsyncClient(timeout=WAIT) as http:
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                path = container()[probe]["httpGet"]["path"]
                assert (await http.get(f"{base}{path}")).status_code == 200, probe
            # Bound beyond loopback the hub would need auth: it has it, so /mcp without a token is refused.
            refused = await http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
        assert await anyio.to_thread.run_sync(healthcheck, port) == 0
        assert await tools_of(base, volumes.alice) == TOOLS
    assert await anyio.to_thread.run_sync(healthcheck, port) != 0, "nothing listens any more"


async def test_a_configmap_update_reaches_the_running_hub(tmp_path: Path) -> None:
    """The kubelet swaps `..data` to a new directory and deletes the old one; the hub reloads within seconds."""
    volumes = Volumes(tmp_path)
    log = tmp_path / "hub.log"
    async with pod(volumes, log) as base:
        await wait_ready(base)
        assert await tools_of(base, volumes.alice) == TOOLS
        narrowed = servers_yaml().replace('allow: ["time_*"]', 'allow: ["time_get_current_time"]')
        assert narrowed != servers_yaml()
        volumes.put_config(narrowed)
        await wait_for_log(log, "config_reloaded", limit=15)
        assert await tools_of(base, volumes.alice) == {"time_get_current_time"}


async def test_the_public_name_the_deployment_allows_is_accepted(tmp_path: Path) -> None:
    volumes = Volumes(tmp_path)
    public = deployment_extra_args()[deployment_extra_args().index("--allow-host") + 1]
    async with pod(volumes, tmp_path / "hub.log") as base, httpx2.AsyncClient(timeout=WAIT) as http:
        answer = await http.post(
            f"{base}/mcp",
            headers={
                "Host": public,  # as a reverse proxy on 443 passes it (nginx: proxy_set_header Host $http_host)
                "Authorization": f"Bearer {volumes.alice}",
                "accept": "application/json, text/event-stream",
            },
            json=initialize_request(),
        )
        assert answer.status_code == 200, answer.text


async def test_a_token_revoked_in_the_secret_is_refused_without_a_restart(tmp_path: Path) -> None:
    volumes = Volumes(tmp_path)
    bob = volumes.scratch.create("bob", ("team",))
    volumes.put_secret()
    async with pod(volumes, tmp_path / "hub.log") as base:
        await wait_ready(base)
        assert await tools_of(base, bob) == TOOLS
        volumes.scratch.revoke("bob")
        volumes.put_secret()
        async with httpx2.AsyncClient(timeout=WAIT) as http:
            with anyio.fail_after(15):
                while True:
                    answer = await http.post(
                        f"{base}/mcp",
                        headers={"Authorization": f"Bearer {bob}", "accept": "application/json, text/event-stream"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    )
                    if answer.status_code == 401:
                        break
                    await anyio.sleep(0.2)
        assert await tools_of(base, volumes.alice) == TOOLS

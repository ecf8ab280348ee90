#!/usr/bin/env bash
# Steward's MCP endpoint through the official Python SDK: runs infra/mcp_client_check.py (list
# the tools, create a record, read it back, in both the stateless 2026-07-28 mode and the
# initialize mode; a wrong token must get 401) in a virtualenv with `mcp` pinned.
#
#   infra/mcp-python-client.sh [mcp_client_check.py options]
#
# With MCP_URL and MCP_TOKEN set: checks that server, e.g. `steward serve` with the events domain:
#   MCP_URL=http://127.0.0.1:8080/mcp MCP_TOKEN="$(steward token create USER_ID)" \
#     infra/mcp-python-client.sh --create-tool create_event --create-args '{...}' \
#       --read-tool get_event --read-args '{"event_id": "{id}"}'
# Without MCP_URL: builds and starts lib/web's example `mcp_test_server` (the test "notes" domain,
#   loopback) and uses the token it prints.
#
# The virtualenv lives in $STEWARD_CACHE_DIR (default ~/.cache/steward), outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."

MCP_SDK_VERSION="2.3.0"
cache_dir="${STEWARD_CACHE_DIR:-$HOME/.cache/steward}"
venv="$cache_dir/venv-mcp-$MCP_SDK_VERSION"
target_dir="${CARGO_TARGET_DIR:-$(pwd)/target}"
work_dir="$target_dir/mcp-python-client"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  echo "python client: installing mcp==$MCP_SDK_VERSION into $venv" >&2
  mkdir -p "$cache_dir"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION" >&2
fi

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap stop_server EXIT

if [ -z "${MCP_URL:-}" ]; then
  echo "python client: building and starting the example MCP server" >&2
  cargo build --quiet -p steward-web --example mcp_test_server
  mkdir -p "$work_dir"
  : >"$work_dir/server.out"
  "$target_dir/debug/examples/mcp_test_server" 127.0.0.1:0 \
    >"$work_dir/server.out" 2>"$work_dir/server.log" &
  server_pid=$!
  for _ in $(seq 1 100); do
    if grep -q '^token=' "$work_dir/server.out"; then break; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  MCP_URL="$(sed -n 's/^url=//p' "$work_dir/server.out")"
  MCP_TOKEN="$(sed -n 's/^token=//p' "$work_dir/server.out")"
  if [ -z "$MCP_URL" ] || [ -z "$MCP_TOKEN" ]; then
    echo "python client: the example server did not start; its log:" >&2
    cat "$work_dir/server.log" >&2
    exit 1
  fi
  export MCP_URL MCP_TOKEN
fi

"$venv/bin/python" infra/mcp_client_check.py "$@"

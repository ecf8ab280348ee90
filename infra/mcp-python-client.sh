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
# Without MCP_URL: builds `steward`, creates an account and a token on a fresh store with the
#   operator commands, runs `steward serve` on a free loopback port and checks it.
#
# The virtualenv lives in $STEWARD_CACHE_DIR (default ~/.cache/steward), outside the clone.
set -euo pipefail
cd "$(dirname "$0")/.."

MCP_SDK_VERSION="2.3.0"
cache_dir="${STEWARD_CACHE_DIR:-$HOME/.cache/steward}"
venv="$cache_dir/venv-mcp-$MCP_SDK_VERSION"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  echo "python client: installing mcp==$MCP_SDK_VERSION into $venv" >&2
  mkdir -p "$cache_dir"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION" >&2
fi

. infra/serve.sh
trap serve_stop EXIT

if [ -z "${MCP_URL:-}" ]; then
  echo "python client: building and starting steward serve" >&2
  serve_build
  user="$(serve_user "Python Client")"
  MCP_TOKEN="$(serve_token "$user" python-client)"
  serve_start
  MCP_URL="$serve_url/mcp"
  export MCP_URL MCP_TOKEN
fi

"$venv/bin/python" infra/mcp_client_check.py "$@"

# Sourced by the test scripts: builds `steward` and runs `steward serve` on a fresh store on a
# free loopback port, the way a user runs it.
#
#   . infra/serve.sh
#   serve_build                       # cargo build -p steward (with steward-stage) --features mcp-conformance (debug)
#   serve_user NAME                   # creates an account in the store; prints its id
#   serve_token USER_ID               # creates an MCP token; prints it
#   serve_start [VAR=value ...]       # starts the server with extra environment; sets serve_url
#   serve_stop                        # stops it (SIGTERM: graceful), also on exit
#
# The store and the logs live in $serve_dir (default $CARGO_TARGET_DIR/serve-<pid>).

serve_target_dir="${CARGO_TARGET_DIR:-$(pwd)/target}"
serve_dir="${serve_dir:-$serve_target_dir/serve-$$}"
serve_bin="$serve_target_dir/debug/steward"
serve_pid=""
serve_url=""

serve_build() {
  # The MCP conformance suite's fixture tools exist only in a build with this feature (and
  # are served only with STEWARD_MCP_CONFORMANCE_FIXTURES=1 on loopback); no release has it.
  # Built with the stage, whose manifest gives the third-party crates the features `cargo test`
  # compiled them with (infra/shared-builds.py), so only Steward's own crates compile here.
  . infra/debug-builds.sh
  cargo build --quiet --locked "${SERVE_BUILD_ARGS[@]}"
  rm -rf "$serve_dir"
  mkdir -p "$serve_dir"
}

serve_user() {
  "$serve_bin" --db "$serve_dir/steward.db" user create --name "$1"
}

serve_token() {
  "$serve_bin" --db "$serve_dir/steward.db" token create "$1" --label "${2:-tests}"
}

serve_start() {
  : >"$serve_dir/serve.out"
  env STEWARD_DB="$serve_dir/steward.db" STEWARD_ADDR=127.0.0.1:0 "$@" \
    "$serve_bin" serve >"$serve_dir/serve.out" 2>"$serve_dir/serve.log" &
  serve_pid=$!
  for _ in $(seq 1 300); do
    serve_url="$(sed -n 's|^Steward is running at \(http://[^/]*\)/$|\1|p' "$serve_dir/serve.out")"
    [ -n "$serve_url" ] && return 0
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "serve: steward serve did not start; its output and log:" >&2
  cat "$serve_dir/serve.out" "$serve_dir/serve.log" >&2
  return 1
}

serve_stop() {
  if [ -n "$serve_pid" ]; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
  fi
}

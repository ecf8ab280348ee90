#!/usr/bin/env bash
# The whole test suite, as CI runs it: module cycles, formatting, the layering and shared-builds
# checks, lints, every test (the DynamoDB and SQS halves against a local moto emulator,
# installed and started here, never skipped), the deployed shape on the local Lambda stage, then
# the MCP conformance suite, the Python MCP client, the browser tests and the deployment checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# No module cycles inside any crate (reads the source only, under a second): the checker on its
# own fixtures first, then every workspace crate against the short list of cycles that a change
# under way removes (infra/module-cycles.allow).
python3 infra/module-cycles.py --self-test
python3 infra/module-cycles.py --allow infra/module-cycles.allow
# The declared minimum Rust is what the dependencies really need (cargo metadata, no build).
python3 infra/rust-version.py

# Build cache outside the clone, so reruns and fresh clones reuse compiled dependencies.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/steward/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export STEWARD_EMULATOR_DIR="${STEWARD_EMULATOR_DIR:-$CARGO_TARGET_DIR/emulator-$$}"

# Disk: a full build cache plus the arm64 builds need about 30 GB, and a disk that fills half-way
# fails a test with a bare ENOSPC. Below DISK_LOW_GB free, drop what a rebuild recreates cheaply
# (incremental state, benchmark builds); below DISK_MIN_GB, stop here and say so.
DISK_LOW_GB=20
DISK_MIN_GB=8
free_gb() { mkdir -p "$CARGO_TARGET_DIR" && df -Pk "$CARGO_TARGET_DIR" | awk 'NR == 2 { print int($4 / 1048576) }'; }
if [ "$(free_gb)" -lt "$DISK_LOW_GB" ]; then
  echo "test: $(free_gb) GB free under $CARGO_TARGET_DIR; removing incremental build state and benchmark builds"
  rm -rf "$CARGO_TARGET_DIR"/*/incremental "$CARGO_TARGET_DIR"/profiling
fi
if [ "$(free_gb)" -lt "$DISK_MIN_GB" ]; then
  echo "test: only $(free_gb) GB free under $CARGO_TARGET_DIR (at least $DISK_MIN_GB GB needed); free some space and run again" >&2
  exit 1
fi

emulator_url="$(infra/emulator.sh start)" || {
  echo "test: the AWS emulator could not start; the DynamoDB and SQS suites cannot run" >&2
  exit 1
}
cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "---- emulator log (last 200 lines) ----" >&2
    infra/emulator.sh log | tail -n 200 >&2
  fi
  infra/emulator.sh stop
  exit "$status"
}
trap cleanup EXIT
echo "test: emulator at $emulator_url"

export STEWARD_TEST_AWS_ENDPOINT="$emulator_url"
export STEWARD_REQUIRE_EMULATOR=1

cargo fmt --all --check
# Crate dependencies against ARCHITECTURE.md's layer table; what each function links.
infra/layers.sh
# Each third-party crate compiled once per profile: the functions' arm64 builds alike, and the
# stage's and serve's debug builds alike the tests' (a few seconds of `cargo tree`).
python3 infra/shared-builds.py
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked

# The deployed shape (tests/stage): the four function binaries as Lambda functions on moto, fed
# by an event-source-mapping poller, under duplicate webhooks, double texts, agent kills and
# throttles. Fails on any duplicate effect, lost message or out-of-order reply (README, "The
# deployed shape, locally"). The stage starts its own moto (a 5 s SQS deduplication window).
# `--target both` then runs the same people against `steward serve` (SQLite, killed and restarted;
# about 10 s more) and prints the two side by side.
# Its third-party crates are the builds `cargo test` made (tests/stage/Cargo.toml): only Steward's
# own crates compile here.
. infra/debug-builds.sh
cargo build --locked "${STAGE_BUILD_ARGS[@]}"
"$CARGO_TARGET_DIR/debug/steward-stage" --target both --conversations 10 --turns 3 --kill-rate 0.1

# MCP against the real protocol peers: the official conformance suite (Node 22 from npm) and
# the official Python SDK client, each against a loopback server with Steward's tool set.
infra/mcp-conformance.sh
infra/mcp-python-client.sh

# The web UI in a real browser (Debian chromium driven by playwright-core) against steward serve.
infra/browser-tests.sh

# The deployment: cfn-lint, sam validate --lint, the template's properties, the sample events
# generator, cargo lambda build --release of the four functions and sam build (host arch).
infra/deploy-checks.sh

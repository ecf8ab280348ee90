#!/usr/bin/env bash
# The web UI in a real browser: playwright-core (npm, pinned in tests/browser/package-lock.json)
# drives Debian's chromium (headless) against `steward serve` on a fresh store, with the
# scripted model replaying tests/browser/chat-script.json so the chat works without a network.
#
#   infra/browser-tests.sh
#
# Installs chromium with apt-get when /usr/bin/chromium is missing (as root, or through sudo).
# Screenshots of the main pages go to $CARGO_TARGET_DIR/browser-screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
  echo "browser tests: installing Debian's chromium" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi

npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >&2

. infra/serve.sh
trap serve_stop EXIT
serve_build
# A default budget, so the Usage page has a limit and what is left of it to show.
serve_start STEWARD_MODEL_PROVIDER="scripted:$(pwd)/tests/browser/chat-script.json" \
  STEWARD_BUDGET_USD=20 STEWARD_BUDGET_TOKENS=1000000 \
  RUST_LOG=warn,steward=info

export STEWARD_URL="$serve_url"
export STEWARD_SCREENSHOTS="$serve_target_dir/browser-screenshots"
rm -rf "$STEWARD_SCREENSHOTS"
echo "browser tests: $(/usr/bin/chromium --version) against $serve_url"
if ! node --test --test-concurrency=1 tests/browser/; then
  echo "---- steward serve log (last 100 lines) ----" >&2
  tail -n 100 "$serve_dir/serve.log" >&2
  exit 1
fi
echo "browser tests: screenshots in $STEWARD_SCREENSHOTS"

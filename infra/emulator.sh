#!/usr/bin/env bash
# Local AWS emulation for tests: moto's server (DynamoDB + SQS) on a free loopback port.
#
#   infra/emulator.sh start   -> installs moto[server] (pinned) in a virtualenv if needed,
#                                starts it, waits until it answers, prints its URL on stdout
#   infra/emulator.sh stop    -> stops the emulator started by `start`
#   infra/emulator.sh log     -> prints the emulator's log
#
# State lives in $STEWARD_EMULATOR_DIR (default: ./target/emulator). The virtualenv lives in
# $STEWARD_CACHE_DIR (default: ~/.cache/steward), outside the clone, so reruns skip the install.
set -euo pipefail

MOTO_VERSION="5.2.5"
cache_dir="${STEWARD_CACHE_DIR:-$HOME/.cache/steward}"
venv="$cache_dir/venv-moto-$MOTO_VERSION"
state_dir="${STEWARD_EMULATOR_DIR:-$(pwd)/target/emulator}"
pid_file="$state_dir/moto.pid"
log_file="$state_dir/moto.log"

install() {
  if [ ! -x "$venv/bin/moto_server" ]; then
    echo "emulator: installing moto[server]==$MOTO_VERSION into $venv" >&2
    mkdir -p "$cache_dir"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
  install
  mkdir -p "$state_dir"
  local port
  port="$(free_port)"
  : >"$log_file"
  # Our launcher (moto_server.py): moto's app with requests serialized, so transactions are
  # as atomic as DynamoDB's own.
  "$venv/bin/python" "$(dirname "$0")/moto_server.py" 127.0.0.1 "$port" >>"$log_file" 2>&1 &
  echo $! >"$pid_file"
  local url="http://127.0.0.1:$port"
  # Importing moto takes a second or two on an idle machine but over 20 s on a loaded one (the
  # stage once gave up while four builds ran): wait up to 90 s, by the clock.
  local deadline=$(( $(date +%s) + 90 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$url/moto-api/" 2>/dev/null; then
      echo "$url"
      return 0
    fi
    if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
      echo "emulator: moto exited during start-up; its log follows" >&2
      cat "$log_file" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "emulator: moto did not answer on $url within 90 s; its log follows" >&2
  cat "$log_file" >&2
  return 1
}

stop() {
  if [ -f "$pid_file" ]; then
    kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  log) cat "$log_file" 2>/dev/null || true ;;
  *) echo "usage: $0 start|stop|log" >&2; exit 2 ;;
esac

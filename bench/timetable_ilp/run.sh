#!/usr/bin/env bash
# Reproduces the engine-vs-integer-programming table for the timetable engine.
#
#   bash bench/timetable_ilp/run.sh            # both CBC (ILP) and CP-SAT, 60 s limit each
#   SOLVERS=cbc bash bench/timetable_ilp/run.sh
#   RANDOM_INSTANCES=30 SOLVERS=cpsat bash bench/timetable_ilp/run.sh   # plus 30 small random ones
#   LIMIT=10 bash bench/timetable_ilp/run.sh    # seconds per solver and instance (default 60)
#
# Creates (once) the virtualenv bench/.venv with pinned PuLP (bundles CBC) and OR-Tools, dumps
# the benchmark instances and the engine's results with the Rust example `timetable_dump`, then
# solves every instance in Python and prints a markdown table (also saved next to the JSON).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/bench/.venv"
out="${OUT:-$root/target/timetable_ilp}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

rm -f "$out"/*.json "$out"/table.md
mkdir -p "$out"
(cd "$root" && cargo run --quiet --release -p steward-events --example timetable_dump -- "$out" "${RANDOM_INSTANCES:-0}")

"$venv/bin/python" "$here/compare.py" "$out" --solvers "${SOLVERS:-cbc,cpsat}" --limit "${LIMIT:-60}" | tee "$out/table.md"
echo "instances, results and table in $out"

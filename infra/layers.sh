#!/usr/bin/env bash
# The layering check (run by infra/test.sh, so by .ci/run). Fails when
#   1. a workspace crate is missing from the layer table in ARCHITECTURE.md ("## Layers": the
#      one place the order is written), or depends against it: a normal or build dependency must
#      be on a strictly lower layer (crates of one layer are peers and never depend on each
#      other); a dev-dependency on the same or a lower layer; `steward-testkit` (layer `dev`) is
#      a dev-dependency only;
#   2. a function depends on more than one surface crate (each `functions/*` composes one);
#   3. a function's normal dependency tree (`cargo tree -p <function> -e normal`) holds a crate
#      its table row below forbids — above all the webhook function, which must link no harness,
#      no domain, no model client, no SQLite, no maud and no MCP library;
#      Every function links one HTTP and TLS stack (reqwest on hyper 1, rustls on ring): no
#      aws-lc (`aws-lc-rs`, `aws-lc-sys`: a second, larger crypto library), no HTTP/2 (`h2`)
#      and not the AWS SDK's own HTTP client; and no general JSON Schema validator (`jsonschema`,
#      about 2.7 MB of a bootstrap; tool arguments are checked by `steward_harness::arg_schema`;
#      bench/RESULTS.md);
#   4. a function's tree enables the MCP conformance fixtures (`steward-mcp/conformance`).
#
#   infra/layers.sh            # exit 0 when all hold; otherwise one line per violation
set -euo pipefail
cd "$(dirname "$0")/.."

# What each function must not link (normal dependencies, whole tree).
never_linked="aws-lc-rs aws-lc-sys h2 aws-smithy-http-client jsonschema"
forbidden_in_tree=(
  "steward-fn-webhook:steward-harness steward-events steward-llm aws-sdk-bedrockruntime rusqlite libsqlite3-sys maud rmcp aws-sdk-dynamodb jsonwebtoken $never_linked"
  "steward-fn-agent:rusqlite libsqlite3-sys maud rmcp jsonwebtoken $never_linked"
  "steward-fn-mcp:rusqlite libsqlite3-sys maud aws-sdk-bedrockruntime jsonwebtoken $never_linked"
  "steward-fn-web:rusqlite libsqlite3-sys rmcp aws-sdk-bedrockruntime $never_linked"
)

status=0
fail() {
  echo "layers: $*" >&2
  status=1
}

# 1 and 2: declared dependencies against the table.
metadata="$(cargo metadata --format-version 1 --no-deps --locked)"
if ! python3 - "$metadata" <<'PY'; then status=1; fi
import json, re, sys

metadata = json.loads(sys.argv[1])
text = open("ARCHITECTURE.md", encoding="utf-8").read()
section = re.search(r"^## Layers\n(.*?)(?=^## )", text, re.S | re.M)
if not section:
    sys.exit("layers: ARCHITECTURE.md has no '## Layers' section")
layer_of = {}
for row in section.group(1).splitlines():
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) < 2 or not re.fullmatch(r"\d+|dev", cells[0]):
        continue
    for name in re.findall(r"`([a-z0-9-]+)`", cells[1]):
        layer_of[name] = cells[0]
if not layer_of:
    sys.exit("layers: the '## Layers' table in ARCHITECTURE.md lists no crates")

members = {p["name"]: p for p in metadata["packages"]}
problems = []
for name in sorted(members):
    if name not in layer_of:
        problems.append(f"{name} is not in ARCHITECTURE.md's layer table")
surfaces = {n for n, l in layer_of.items() if l == "4"}
for name, package in sorted(members.items()):
    mine = layer_of.get(name)
    if mine is None:
        continue
    used_surfaces = set()
    for dep in package["dependencies"]:
        other = dep["name"]
        if other == name or other not in members:
            continue
        theirs = layer_of.get(other)
        if theirs is None:
            continue
        kind = dep["kind"] or "normal"
        if kind == "dev":
            if theirs != "dev" and mine != "dev" and int(theirs) > int(mine):
                problems.append(f"{name} (layer {mine}) dev-depends on {other} (layer {theirs}), a higher layer")
            continue
        if theirs == "dev":
            problems.append(f"{name} has {other} as a {kind} dependency; it is a dev-dependency only")
        elif mine == "dev":
            continue  # test support may use any crate below the binaries; only tests use it
        elif int(theirs) >= int(mine):
            problems.append(f"{name} (layer {mine}) depends on {other} (layer {theirs}); dependencies point to lower layers only")
        if other in surfaces:
            used_surfaces.add(other)
    if name.startswith("steward-fn-") and len(used_surfaces) > 1:
        problems.append(f"{name} composes {len(used_surfaces)} surfaces ({', '.join(sorted(used_surfaces))}); a function composes one")
for p in problems:
    print(f"layers: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# 3 and 4: what each function actually links.
for entry in "${forbidden_in_tree[@]}"; do
  function="${entry%%:*}"
  tree="$(cargo tree --locked -p "$function" -e normal --prefix none --format '{p} {f}')"
  crates="$(awk '{print $1}' <<<"$tree" | sort -u)"
  for crate in ${entry#*:}; do
    if grep -qx "$crate" <<<"$crates"; then
      via="$(cargo tree --locked -p "$function" -e normal -i "$crate" --depth 1 --prefix none --format '{p}' | sed -n 2p | awk '{print $1}')"
      fail "$function links $crate${via:+ (through $via)}"
    fi
  done
  if grep -Eq '^steward-mcp .*(^|[ ,])conformance([ ,]|$)' <<<"$tree"; then
    fail "$function builds the MCP conformance fixtures (steward-mcp/conformance)"
  fi
done

if [ "$status" -eq 0 ]; then
  echo "layers: ok"
fi
exit "$status"

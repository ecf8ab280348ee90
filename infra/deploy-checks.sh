#!/usr/bin/env bash
# The deployment's checks, run by infra/test.sh (and on their own):
#
#   1. a virtualenv outside the clone with pinned cfn-lint, aws-sam-cli, cargo-lambda and zig
#      (PyPI; cargo-lambda's wheel is a prebuilt binary and uses the `ziglang` wheel as its
#      cross-linker, pinned so a zig release cannot break the arm64 build unannounced);
#   2. events/ is what infra/sample_events.py writes (the WhatsApp sample's signature included);
#   3. cfn-lint and `sam validate --lint` on template.yaml: zero errors, zero warnings;
#   4. infra/template_test.py: the properties cfn-lint does not check;
#   5. `cargo lambda build --release --arm64` of the four functions: the template's default
#      Architecture, built the way `sam build` builds it (cargo-lambda with zig), each checked to
#      be an aarch64 ELF and its size printed. Needs the rustup target aarch64-unknown-linux-gnu,
#      which this step adds when it is missing (a download from rustup's servers);
#   6. `sam build` with the default Architecture (arm64), cargo-lambda on the PATH: each
#      bootstrap it ships must be byte-identical to step 5's (same package, features, profile).
#
# All offline with respect to AWS: no credentials are needed or read.
set -euo pipefail
cd "$(dirname "$0")/.."

SAM_VERSION="1.170.0"
CFN_LINT_VERSION="1.58.0"
CARGO_LAMBDA_VERSION="1.9.2"
ZIG_VERSION="0.17.1"
FUNCTIONS=(webhook agent mcp web)
declare -A built_sha

cache_dir="${STEWARD_CACHE_DIR:-$HOME/.cache/steward}"
venv="$cache_dir/venv-deploy-$SAM_VERSION-$CFN_LINT_VERSION-$CARGO_LAMBDA_VERSION-zig$ZIG_VERSION"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache_dir/target}"

# Never talk to AWS: a region for the tools that insist on one, no credentials, no telemetry.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-eu-west-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"
export SAM_CLI_TELEMETRY=0
unset AWS_PROFILE

step() { echo "deploy-checks: $*"; }
started=$(date +%s)

if [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cargo-lambda" ] || [ ! -x "$venv/bin/cfn-lint" ]; then
  step "installing aws-sam-cli==$SAM_VERSION cfn-lint==$CFN_LINT_VERSION cargo-lambda==$CARGO_LAMBDA_VERSION ziglang==$ZIG_VERSION into $venv"
  mkdir -p "$cache_dir"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "aws-sam-cli==$SAM_VERSION" "cfn-lint==$CFN_LINT_VERSION" "cargo-lambda==$CARGO_LAMBDA_VERSION" \
    "ziglang==$ZIG_VERSION"
fi
export PATH="$venv/bin:$PATH"

step "events/ matches infra/sample_events.py"
python3 infra/sample_events.py --check

step "cfn-lint template.yaml"
# Exit codes: 0 clean, 1 crash, 2 errors, 4 warnings, 8 informational (or-ed); only a clean (or
# informational-only) result passes.
set +e
cfn-lint --format parseable template.yaml
lint=$?
set -e
if [ $((lint & 7)) -ne 0 ]; then
  echo "deploy-checks: cfn-lint found errors or warnings (exit $lint)" >&2
  exit 1
fi

step "sam validate --lint"
sam validate --lint --template template.yaml

step "template properties (infra/template_test.py)"
"$venv/bin/python" -m unittest infra/template_test.py

step "cargo lambda build --release --arm64 (the template's default Architecture)"
# CI builds the release profile with quick settings (opt-level 0, no LTO, 64 codegen units): a
# fresh machine compiles every dependency a second time here, for arm64, and the full profile
# took over half an hour on a loaded 2-core machine. The check is that the four functions build
# and link for arm64 (what `sam deploy` ships by default) with cargo-lambda and its zig
# cross-linker, that they are aarch64 binaries, and that `sam build` ships those very bytes;
# none of that needs optimised code, and opt-level 0 against 1 cut a fresh machine's run of this
# script from 1,130 s to 565 s (bench/RESULTS.md). So the sizes printed below are of this build,
# not of what ships (`cargo lambda build --release` and `sam build` outside CI use the full
# profile; its sizes are in bench/RESULTS.md). The rustup target aarch64-unknown-linux-gnu is added when missing (a
# download from rustup's servers); no system cross-compiler is needed.
# The release profile's per-package opt-levels in Cargo.toml (dependencies at "z", the hot ones
# at 3) outrank CARGO_PROFILE_RELEASE_OPT_LEVEL, and no environment variable can name them. So
# every package override gets CI's opt-level too, through a cargo config file in the
# repository's `.cargo/` that both `cargo lambda build` and `sam build` (which builds in place)
# read, and that is removed on exit; so CI compiles each dependency once. A caller who sets
# CARGO_PROFILE_RELEASE_OPT_LEVEL keeps Cargo.toml's overrides; an existing `.cargo/config.toml`
# is never touched.
CI_OPT_LEVEL=0
if [ -z "${CARGO_PROFILE_RELEASE_OPT_LEVEL:-}" ] && [ ! -e .cargo/config.toml ]; then
  made_cargo_dir=0
  [ -d .cargo ] || { mkdir .cargo; made_cargo_dir=1; }
  python3 -c 'import sys, tomllib
for p in tomllib.load(open("Cargo.toml", "rb"))["profile"]["release"].get("package", {}):
    print(f"[profile.release.package.\"{p}\"]\nopt-level = {sys.argv[1]}")' "$CI_OPT_LEVEL" > .cargo/config.toml
  trap 'rm -f .cargo/config.toml; [ "$made_cargo_dir" = 1 ] && rmdir .cargo 2>/dev/null; true' EXIT
fi
export CARGO_PROFILE_RELEASE_LTO="${CARGO_PROFILE_RELEASE_LTO:-false}"
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS="${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-64}"
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-$CI_OPT_LEVEL}"
arm_target=aarch64-unknown-linux-gnu
if ! rustup target list --installed | grep -qx "$arm_target"; then
  step "  adding the rustup target $arm_target"
  rustup target add "$arm_target"
fi
# One function at a time: Cargo unifies features across the packages of one build, so building
# the four together would give each the store adapters and model clients of all of them. The
# third-party crates they share are built alike in all four (functions/feature-pins, checked by
# infra/shared-builds.py), so only the first build compiles the AWS SDK; the other three reuse it.
for f in "${FUNCTIONS[@]}"; do
  cargo lambda build --release --locked --arm64 -p "steward-fn-$f" --bin "$f"
done
for f in "${FUNCTIONS[@]}"; do
  bootstrap="$CARGO_TARGET_DIR/lambda/$f/bootstrap"
  [ -x "$bootstrap" ] || { echo "deploy-checks: $bootstrap (arm64) was not built" >&2; exit 1; }
  # ELF e_machine (2 bytes, little-endian, at offset 18): 0xb7 is aarch64.
  machine=$(od -An -tx1 -j18 -N2 "$bootstrap" | tr -d ' \n')
  [ "$machine" = "b700" ] || { echo "deploy-checks: $bootstrap is not an aarch64 binary (e_machine $machine)" >&2; exit 1; }
  step "  $f (arm64): $(du -h "$bootstrap" | cut -f1) ($(stat -c %s "$bootstrap") bytes)"
  built_sha[$f]=$(sha256sum "$bootstrap" | cut -d' ' -f1)
done

step "sam build (the default Architecture, arm64, offline)"
build_dir="$CARGO_TARGET_DIR/sam-build"
rm -rf "$build_dir"
sam build --template template.yaml --build-dir "$build_dir"
# What sam build ships must be the binary step 5 built and measured: the same package alone
# (each function's CodeUri is its own package, so Cargo unifies no other member's features) and
# the same profile (cargo-lambda's release settings are named in Cargo.toml). Then Cargo has
# nothing to recompile, and the two bootstraps are the same bytes.
for f in "${FUNCTIONS[@]}"; do
  logical="${f^}Function"
  shipped="$build_dir/$logical/bootstrap"
  [ -x "$shipped" ] || { echo "deploy-checks: sam build made no bootstrap for $logical" >&2; exit 1; }
  if [ "$(sha256sum "$shipped" | cut -d' ' -f1)" != "${built_sha[$f]}" ]; then
    echo "deploy-checks: sam build's $logical/bootstrap differs from cargo lambda build -p steward-fn-$f's: it was built with other features or settings" >&2
    exit 1
  fi
done
step "  sam build shipped the four binaries step 5 built (same sha256)"

step "done in $(( $(date +%s) - started )) s"

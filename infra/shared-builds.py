#!/usr/bin/env python3
"""Checks that CI compiles each third-party crate once per profile (run by infra/test.sh).

Cargo resolves features per build. A crate two builds enable different features of is compiled
twice, and so is every crate above it (for the AWS SDK's clients, minutes each on 2 cores). Two
places keep CI's builds alike; this check reads `cargo tree` (no build, a few seconds) and fails
when a dependency change breaks either:

  1. the four Lambda functions, each built alone for arm64 (infra/deploy-checks.sh, as `sam
     build` builds them): every third-party crate two of them share has the same features in
     both. functions/feature-pins/Cargo.toml enables the union for all four; its `may-differ`
     list names the crates allowed to differ;
  2. the debug binaries CI runs outside `cargo test` (infra/test.sh's build for the stage, the
     four functions and `steward`; infra/serve.sh's `steward` with the MCP fixtures) use only
     third-party builds that `cargo test --workspace` makes too. tests/stage/Cargo.toml enables
     what the tests' dev-dependencies add.

    python3 infra/shared-builds.py    # exit 0 when both hold; otherwise one line per crate
"""

import subprocess
import sys
import tomllib
from collections import defaultdict

FUNCTIONS = ["steward-fn-webhook", "steward-fn-agent", "steward-fn-mcp", "steward-fn-web"]
ARM64 = "aarch64-unknown-linux-gnu"


def debug_build_args(name):
    """The cargo arguments of one of (2)'s builds, from infra/debug-builds.sh, which the scripts
    that run them source too."""
    out = subprocess.run(["bash", "-c", f'. infra/debug-builds.sh && printf "%s\\n" "${{{name}[@]}}"'],
                         check=True, capture_output=True, text=True).stdout
    return out.split()


def built(args):
    """(crate, version) -> the feature sets one build compiles it with (a crate can be built
    twice in one build: for the target and for the build host). Workspace crates are left out:
    each build compiles those with its own features by design."""
    tree = subprocess.run(
        ["cargo", "tree", "--locked", *args, "--prefix", "none", "--format", "{p}|{f}"],
        check=True, capture_output=True, text=True).stdout
    crates = defaultdict(set)
    for line in tree.splitlines():
        package, _, features = line.partition("|")
        words = package.replace(" (*)", "").replace(" (proc-macro)", "").split()
        if len(words) != 2:
            continue  # a workspace crate: its path follows the version
        crates[tuple(words)].add(frozenset(f for f in features.replace(" (*)", "").split(",") if f))
    return crates


def show(sets):
    return " and ".join("[" + ", ".join(sorted(s)) + "]" for s in sorted(sets, key=sorted))


def functions_alike():
    pins = tomllib.load(open("functions/feature-pins/Cargo.toml", "rb"))
    may_differ = set(pins["package"]["metadata"]["feature-pins"]["may-differ"])
    by_crate = defaultdict(dict)
    for function in FUNCTIONS:
        for crate, sets in built(["-p", function, "--target", ARM64, "-e", "normal,build"]).items():
            by_crate[crate][function] = frozenset(sets)
    problems = []
    for (crate, version), by_function in sorted(by_crate.items()):
        if crate in may_differ or len(set(by_function.values())) < 2:
            continue
        union = sorted({f for sets in by_function.values() for s in sets for f in s})
        each = "; ".join(f"{fn}: {show(sets)}" for fn, sets in sorted(by_function.items()))
        problems.append(
            f"{crate} {version} is built with different features per function ({each}); "
            f"enable [{', '.join(union)}] in functions/feature-pins/Cargo.toml")
    return problems


def debug_builds_alike():
    tests = built(["--workspace", "-e", "normal,build,dev"])
    problems = []
    for name, args in (("infra/test.sh's stage build", debug_build_args("STAGE_BUILD_ARGS")),
                       ("infra/serve.sh's build", debug_build_args("SERVE_BUILD_ARGS"))):
        for (crate, version), sets in sorted(built(args + ["-e", "normal,build"]).items()):
            extra = sets - tests.get((crate, version), set())
            if extra:
                problems.append(
                    f"{name} compiles {crate} {version} with {show(extra)}, which `cargo test "
                    f"--workspace` does not (it uses {show(tests.get((crate, version), set())) or 'none'}); "
                    f"enable the difference in tests/stage/Cargo.toml")
    return problems


def main():
    problems = functions_alike() + debug_builds_alike()
    for p in problems:
        print(f"shared-builds: {p}", file=sys.stderr)
    if not problems:
        print("shared-builds: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

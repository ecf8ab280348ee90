#!/usr/bin/env python3
"""The workspace's `rust-version` is what its dependencies really need.

Reads `cargo metadata --locked` (no build) and fails when a package from a registry declares a
higher `rust-version` than the workspace does: such a toolchain could not build Steward, so the
promise in Cargo.toml would be false. Prints the declared and the needed version either way.
"""

import json
import subprocess
import sys


def parse(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main() -> int:
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    resolved = {node["id"] for node in meta["resolve"]["nodes"]}
    members = set(meta["workspace_members"])
    ours_packages = [p for p in meta["packages"] if p["id"] in members]
    missing = sorted(p["name"] for p in ours_packages if not p.get("rust_version"))
    if missing:
        print(
            f"rust-version: {', '.join(missing)} must say `rust-version.workspace = true`",
            file=sys.stderr,
        )
        return 1
    declared = {p["rust_version"] for p in ours_packages}
    if len(declared) != 1:
        print(f"rust-version: workspace members declare {sorted(declared) or 'none'}; expected one value", file=sys.stderr)
        return 1
    ours = declared.pop()
    needed = max(
        (
            (parse(p["rust_version"]), p["rust_version"], f"{p['name']} {p['version']}")
            for p in meta["packages"]
            if p["id"] in resolved and p["source"] and p.get("rust_version")
        ),
        default=((0, 0, 0), "0", "nothing"),
    )
    if needed[0] > parse(ours):
        print(
            f"rust-version: Cargo.toml says {ours}, but {needed[2]} needs {needed[1]}; raise it",
            file=sys.stderr,
        )
        return 1
    print(f"rust-version: {ours} (highest need: {needed[2]}, {needed[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Fail when modules inside a crate depend on each other in a cycle.

ARCHITECTURE.md asks for "no module cycles": inside every crate, the modules that share a parent
must form a DAG, so each can be read (and moved to its own crate) knowing only what is below it.
This script checks that for every library and binary target of the workspace and exits 1 naming
each cycle it finds, with one `file:line` per edge so the import to remove is easy to find.

Why a script and not a tool: `cargo-modules` (`dependencies --acyclic`) answers the same question
from rust-analyzer's semantic model, but it builds about 280 crates (rust-analyzer's `ra_ap_*`
among them) and its current release needs a newer toolchain than the one CI pins. This check
only reads source text, needs nothing but Python's standard library, and runs in well under a
second. ARCHITECTURE.md ("Decisions") records the choice.

What counts as a dependency. For each module file, after removing comments, string and char
literals, and every item marked `#[cfg(test)]` (test modules may reach anywhere):
  * every path beginning with `crate::`, `$crate::`, `super::` or `self::` (in `use` trees,
    braces expanded, and anywhere else in the code);
  * in `use` trees, a path whose first segment is a child module of the current module;
  * a bare `name!` call of a `macro_rules!` macro that exactly one module of the crate defines.
A path is resolved segment by segment: a child module descends, a name brought in by a `use`
in that module (at any visibility) is followed to where it points, and anything else is an item
of the module reached so far. A reference from module S to module T is an edge between the two
*siblings* under their closest common ancestor: `crate::a::x` used in `crate::b::y` is the edge
b -> a under the crate root. A child using its parent's own items, and a parent using its
children, are not sibling edges: a parent module's own file is the place for what its children
share. Cycles are the strongly connected components (Tarjan) of more than one sibling, per parent.

Known blind spots, accepted for a check this cheap: paths written through a type alias or a
trait's associated items resolve to where the alias is declared, and macro-generated paths are
seen only as written in the macro's body.

Usage: module-cycles.py [--allow FILE] [CRATE_SRC_ROOT ...]
  With no roots, the workspace's targets come from `cargo metadata --no-deps` (no build).
  `--allow FILE` names known cycles that a planned change removes (see module-cycles.allow).
  `--self-test` checks the checker on small fixtures and exits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

# --------------------------------------------------------------------------------------------
# Lexing: Rust source to a list of (token, line) with comments and literals gone.
# --------------------------------------------------------------------------------------------

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RAW_STRING = re.compile(r'b?r(#*)"')


def tokens(text: str) -> list[tuple[str, int]]:
    """Identifiers, `::`, and single punctuation characters, each with its line number.

    Comments, string literals (plain, byte, raw) and char literals are dropped, so a path in
    documentation or in a message is never mistaken for a dependency.
    """
    out: list[tuple[str, int]] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, i = 1, i + 2  # block comments nest in Rust
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not IDENT.match(text[i - 1])):
            close = '"' + m.group(1)
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            i = text.index('"', i) + 1
            while i < n and text[i] != '"':
                line += text[i] == "\n"
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a): a lifetime has no
            # closing quote right after its first character.
            if text.startswith("\\", i + 1):
                i = text.index("'", i + 3) + 1  # past the escaped character: '\'' too
            elif i + 2 < n and text[i + 2] == "'":
                i += 3
            else:
                i += 1
        elif m := IDENT.match(text, i):
            out.append((m.group(0), line))
            i = m.end()
        elif text.startswith("::", i):
            out.append(("::", line))
            i += 2
        else:
            out.append((c, line))
            i += 1
    return out


def skip_item(toks: list[tuple[str, int]], i: int) -> int:
    """Index just past the item starting at `i`: its first `;` at depth 0 or its `{…}` block."""
    depth = 0
    while i < len(toks):
        t = toks[i][0]
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif t == ";" and depth == 0:
            return i + 1
        elif t == "{":
            return match_brace(toks, i) + 1
        i += 1
    return i


def match_brace(toks: list[tuple[str, int]], i: int) -> int:
    """Index of the `}` closing the `{` at `i`."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] == "{":
            depth += 1
        elif toks[j][0] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def attribute_end(toks: list[tuple[str, int]], i: int) -> int:
    """Index just past the attribute `#[…]` or `#![…]` starting at `i`."""
    j = i + 1
    if toks[j][0] == "!":
        j += 1
    depth = 0
    while j < len(toks):
        if toks[j][0] == "[":
            depth += 1
        elif toks[j][0] == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def is_cfg_test(toks: list[tuple[str, int]], i: int) -> bool:
    """`#[cfg(test)]` exactly (not `cfg(any(test, …))`, which also builds outside tests)."""
    return [t for t, _ in toks[i : i + 7]] == ["#", "[", "cfg", "(", "test", ")", "]"]


def strip_test_items(toks: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The tokens with every item under `#[cfg(test)]` removed (with its other attributes)."""
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(toks):
        if toks[i][0] == "#" and is_cfg_test(toks, i):
            j = attribute_end(toks, i)
            while j < len(toks) and toks[j][0] == "#":
                j = attribute_end(toks, j)
            i = skip_item(toks, j)
        else:
            out.append(toks[i])
            i += 1
    return out


# --------------------------------------------------------------------------------------------
# The module tree of one crate.
# --------------------------------------------------------------------------------------------

Path = tuple[str, ...]


@dataclass
class Module:
    """One module: where its file is, its children, its `use` names, its references."""

    path: Path
    file: str
    dir: str  # where the files of its `mod x;` children are
    children: set[str] = field(default_factory=set)
    uses: dict[str, Path] = field(default_factory=dict)  # name -> absolute path it names
    refs: list[tuple[Path, int, str]] = field(default_factory=list)  # (path, line, file)
    macro_calls: list[tuple[str, int, str]] = field(default_factory=list)
    macros: set[str] = field(default_factory=set)


def resolve_relative(segs: list[str], here: Path, in_use: bool, children: set[str]) -> Path | None:
    """An absolute path for `segs` written in module `here`, or None for an outside path."""
    head = segs[0]
    if head in ("crate", "$crate"):
        return tuple(segs[1:])
    if head in ("super", "self"):
        base = list(here)
        k = 0
        while k < len(segs) and segs[k] in ("super", "self"):
            if segs[k] == "super":
                if not base:
                    return None
                base.pop()
            k += 1
        return tuple(base + segs[k:])
    if in_use and head in children:
        return here + tuple(segs)
    return None


def use_tree(toks: list[tuple[str, int]], i: int, prefix: list[str], found: list) -> int:
    """Parse a `use` tree from `i`, appending (segments, alias, line); returns the index after it."""
    segs = list(prefix)
    while i < len(toks):
        t, line = toks[i]
        if t == "{":
            i += 1
            while toks[i][0] != "}":
                i = use_tree(toks, i, segs, found)
                if toks[i][0] == ",":
                    i += 1
            return i + 1
        if t == "*":
            found.append((segs, None, line))
            return i + 1
        if t == "::":
            i += 1
            continue
        if IDENT.fullmatch(t) or t == "$":
            if t == "$":  # `$crate` inside a macro body
                t = "$crate"
                i += 1
            segs.append(t)
            i += 1
            if i < len(toks) and toks[i][0] == "as":
                found.append((segs, toks[i + 1][0], line))
                return i + 2
            if i < len(toks) and toks[i][0] in (",", "}", ";"):
                name = segs[-2] if segs[-1] == "self" and len(segs) > 1 else segs[-1]
                target = segs[:-1] if segs[-1] == "self" else segs
                found.append((target, name, line))
                return i
            continue
        return i + 1
    return i


def scan(module: Module, toks: list[tuple[str, int]], modules: dict[Path, Module], queue: list) -> None:
    """Read one module's tokens: child modules (queued), `use` names, paths and macro calls."""
    here = module.path
    i = 0
    while i < len(toks):
        t, line = toks[i]
        if t == "mod" and i + 2 < len(toks) and IDENT.fullmatch(toks[i + 1][0]):
            name, after = toks[i + 1][0], toks[i + 2][0]
            if after == ";":
                module.children.add(name)
                queue.append((module, name, line))
                i += 3
            elif after == "{":
                # An inline module: its body is read here; its own `mod x;` files are in a folder.
                child = Module(here + (name,), module.file, os.path.join(module.dir, name))
                module.children.add(name)
                modules[child.path] = child
                close = match_brace(toks, i + 2)
                scan(child, toks[i + 3 : close], modules, queue)
                i = close + 1
            else:
                i += 1
            continue
        if t == "macro_rules" and i + 2 < len(toks) and toks[i + 1][0] == "!":
            module.macros.add(toks[i + 2][0])
            # The macro body is scanned as part of this module, so `$crate::x` counts here.
            i += 3
            continue
        if t == "use":
            found: list = []
            i = use_tree(toks, i + 1, [], found)
            for segs, alias, uline in found:
                if not segs:
                    continue
                target = resolve_relative(segs, here, True, module.children)
                if target is None:
                    continue
                module.refs.append((target, uline, module.file))
                if alias and alias != "_":
                    module.uses[alias] = target
            continue
        if t in ("crate", "super", "self") or (t == "$" and i + 1 < len(toks) and toks[i + 1][0] == "crate"):
            # A path in code: `crate::a::b`, `super::x`, `$crate::y` (stops at `::{`, `::<`).
            j = i + 1 if t == "$" else i
            segs = ["$crate" if t == "$" else t]
            j += 1
            while j + 1 < len(toks) and toks[j][0] == "::" and IDENT.fullmatch(toks[j + 1][0]):
                segs.append(toks[j + 1][0])
                j += 2
            if len(segs) > 1:
                target = resolve_relative(segs, here, False, module.children)
                if target is not None:
                    module.refs.append((target, line, module.file))
            i = j
            continue
        if IDENT.fullmatch(t) and i + 1 < len(toks) and toks[i + 1][0] == "!":
            if i == 0 or toks[i - 1][0] != "::":
                module.macro_calls.append((t, line, module.file))
        i += 1


def children_dir(file: str) -> str:
    """Where `mod x;` in `file` looks for `x.rs`: beside `lib.rs`/`main.rs`/`mod.rs`, else in a
    folder named after the file."""
    directory, base = os.path.split(file)
    return directory if base in ("lib.rs", "main.rs", "mod.rs") else os.path.join(directory, base[:-3])


def path_attributes(text: str) -> dict[int, str]:
    """Line of the `mod` -> its `#[path = "…"]` file (the lexer drops string literals)."""
    out = {}
    pattern = r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s'
    for m in re.finditer(pattern, text):
        out[text.count("\n", 0, m.end()) + 1] = m.group(1)
    return out


def load_crate(root_file: str) -> dict[Path, Module]:
    """Every non-test module of the crate whose root file is `root_file`."""
    root = Module((), root_file, os.path.dirname(root_file))
    modules: dict[Path, Module] = {(): root}
    pending = [root]
    while pending:
        module = pending.pop()
        with open(module.file, encoding="utf-8") as f:
            text = f.read()
        queue: list[tuple[Module, str, int]] = []
        scan(module, strip_test_items(tokens(text)), modules, queue)
        moved = path_attributes(text)
        for parent, name, line in queue:
            if line in moved:  # relative to the declaring file's folder
                file = os.path.join(os.path.dirname(parent.file), moved[line])
            else:
                flat = os.path.join(parent.dir, name + ".rs")
                file = flat if os.path.exists(flat) else os.path.join(parent.dir, name, "mod.rs")
            if not os.path.exists(file):
                raise SystemExit(f"module-cycles: no file for `mod {name};` in {parent.file}")
            child = Module(parent.path + (name,), file, children_dir(file))
            modules[child.path] = child
            pending.append(child)
    return modules


# --------------------------------------------------------------------------------------------
# Resolution and cycles.
# --------------------------------------------------------------------------------------------


def resolve(modules: dict[Path, Module], target: Path) -> Path:
    """The deepest module that `target` names: children descend, `use` names are followed."""
    current: Path = ()
    rest = list(target)
    hops = 0
    while rest and hops < 64:  # a `use` chain longer than this is a loop of re-exports
        name = rest[0]
        module = modules.get(current)
        if module is None:
            return current
        if name in module.children:
            current = current + (name,)
            rest.pop(0)
        elif name in module.uses and module.uses[name] != current + (name,):
            rest = list(module.uses[name]) + rest[1:]
            current = ()
            hops += 1
        else:
            return current
    return current


def sibling_edges(modules: dict[Path, Module]) -> dict[Path, dict[str, dict[str, tuple[str, int]]]]:
    """parent -> from-child -> to-child -> (file, line) of one reference making the edge."""
    macro_home: dict[str, list[Path]] = {}
    for module in modules.values():
        for name in module.macros:
            macro_home.setdefault(name, []).append(module.path)
    edges: dict[Path, dict[str, dict[str, tuple[str, int]]]] = {}
    for module in modules.values():
        targets = [(resolve(modules, path), line, f) for path, line, f in module.refs]
        for name, line, f in module.macro_calls:
            homes = macro_home.get(name, [])
            if len(homes) == 1:
                targets.append((homes[0], line, f))
        for target, line, f in targets:
            source = module.path
            k = 0
            while k < len(source) and k < len(target) and source[k] == target[k]:
                k += 1
            if k < len(source) and k < len(target):
                by_parent = edges.setdefault(source[:k], {})
                by_parent.setdefault(source[k], {}).setdefault(target[k], (f, line))
    return edges


def strongly_connected(nodes: set[str], edges: dict[str, dict[str, tuple[str, int]]]) -> list[list[str]]:
    """Tarjan's algorithm: the components of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


@dataclass
class Cycle:
    """A cycle among the children of `parent` in the crate at `root`."""

    root: str
    parent: Path
    members: list[str]
    evidence: list[str]

    def name(self) -> str:
        where = "::".join(("crate",) + self.parent)
        return f"{self.root}: {where}::{{{', '.join(self.members)}}}"


def crate_cycles(root_file: str, repo: str) -> list[Cycle]:
    """Every module cycle of the crate whose root file is `root_file`."""
    modules = load_crate(root_file)
    label = os.path.relpath(root_file, repo)
    cycles = []
    for parent, edges in sorted(sibling_edges(modules).items()):
        nodes = set(edges) | {t for e in edges.values() for t in e}
        for members in strongly_connected(nodes, edges):
            evidence = [
                f"{a} -> {b} ({os.path.relpath(f, repo)}:{line})"
                for a in members
                for b, (f, line) in sorted(edges.get(a, {}).items())
                if b in members
            ]
            cycles.append(Cycle(label, parent, members, evidence))
    return cycles


# --------------------------------------------------------------------------------------------
# The allow-list and the command line.
# --------------------------------------------------------------------------------------------


def read_allow(path: str) -> list[tuple[str, Path, set[str]]]:
    """Entries `ROOT_FILE [crate::PARENT]: member member …`; `#` starts a comment (say there
    which change removes the cycle). Without a parent, the cycle is among top-level modules."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            entry = re.fullmatch(r"(\S+)(?:\s+crate((?:::\w+)*))?\s*:\s*(.+)", text)
            if entry is None:
                raise SystemExit(f"module-cycles: {path}: cannot read the entry {text!r}")
            root, parent, members = entry.groups()
            segments = tuple(parent.split("::")[1:]) if parent else ()
            entries.append((root, segments, set(members.split())))
    return entries


def check(roots: list[str], repo: str, allow: list[tuple[str, Path, set[str]]]) -> int:
    """Print the cycles not allowed and the allow entries that match nothing; 1 if any."""
    failed = False
    used = set()
    for root_file in roots:
        for cycle in crate_cycles(root_file, repo):
            entry = next(
                (
                    k
                    for k, (r, parent, m) in enumerate(allow)
                    if r == cycle.root and parent == cycle.parent and set(cycle.members) <= m
                ),
                None,
            )
            if entry is not None:
                used.add(entry)
                print(f"module-cycles: allowed (listed) {cycle.name()}")
                continue
            failed = True
            print(f"module-cycles: CYCLE {cycle.name()}")
            for line in cycle.evidence:
                print(f"    {line}")
    for k, (root, parent, members) in enumerate(allow):
        if k not in used:
            failed = True
            where = "::".join(("crate",) + parent)
            print(f"module-cycles: stale allow-list entry (no such cycle any more; remove it): "
                  f"{root} {where}: {' '.join(sorted(members))}")
    if not failed:
        print(f"module-cycles: no unlisted cycles in {len(roots)} crate targets")
    return 1 if failed else 0


def workspace_roots(repo: str) -> list[str]:
    """The root file of every library and binary target of every workspace member."""
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
            cwd=repo, check=True, capture_output=True, text=True,
        ).stdout
    )
    roots = []
    for package in meta["packages"]:
        for target in package["targets"]:
            if set(target["kind"]) & {"lib", "bin", "proc-macro", "rlib", "cdylib"}:
                roots.append(target["src_path"])
    return sorted(set(roots))


def self_test() -> int:
    """The checker on fixtures: a cycle is found and named, an acyclic crate passes."""
    cases = {
        # a -> b through `crate::`, b -> a through `super::`: one cycle.
        "cycle": {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::Thing;\n",
            "b.rs": "pub struct Thing;\nfn f() -> super::a::X { todo!() }\n",
        },
        # Braced `use` trees, re-exports through the root, nested modules.
        "nested": {
            "lib.rs": "mod t;\npub use t::x::Y;\nmod top;\n",
            "t/mod.rs": "pub mod x;\npub mod y;\n",
            "t/x.rs": "use super::{y::{self, Z}};\npub struct Y;\n",
            "t/y.rs": "pub struct Z;\nfn g() { let _ = crate::Y; }\n",
            "top.rs": "use crate::t::y::Z;\n",
        },
        # Test items, comments and strings are not dependencies; lifetimes don't break lexing.
        "clean": {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\nfn f<'a>(s: &'a str) -> [char; 2] { ['x', '\\''] }\n",
            "b.rs": (
                "pub struct B;\n// crate::a::A\nconst S: &str = \"crate::a::A\";\n"
                "const R: &str = r#\"crate::a::\"A\"#;\n"
                "#[cfg(test)]\nmod tests { use crate::a::A; }\n"
            ),
        },
        # A macro defined in one module and called bare in another is an edge.
        "macro": {
            "lib.rs": "#[macro_use]\nmod m;\nmod k;\n",
            "m.rs": "macro_rules! make { () => {} }\nuse crate::k::K;\n",
            "k.rs": "pub struct K;\nmake!();\n",
        },
    }
    expected = {
        "cycle": [((), ["a", "b"])],
        "nested": [(("t",), ["x", "y"])],
        "clean": [],
        "macro": [((), ["k", "m"])],
    }
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, files in cases.items():
            for rel, text in files.items():
                path = os.path.join(tmp, name, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            got = [(c.parent, c.members) for c in crate_cycles(os.path.join(tmp, name, "lib.rs"), tmp)]
            if got != expected[name]:
                failures += 1
                print(f"module-cycles self-test {name}: expected {expected[name]}, got {got}")
        # The command fails on the cycle and names it; an allow entry lets it pass; a stale one fails.
        root = os.path.join(tmp, "cycle", "lib.rs")
        if check([root], tmp, []) != 1:
            failures += 1
            print("module-cycles self-test: a cycle did not fail the check")
        # An entry for the same names under another parent does not allow it.
        if check([root], tmp, [("cycle/lib.rs", ("x",), {"a", "b"})]) != 1:
            failures += 1
            print("module-cycles self-test: a cycle did not fail the check")
        if check([root], tmp, [("cycle/lib.rs", (), {"a", "b"})]) != 0:
            failures += 1
            print("module-cycles self-test: an allowed cycle failed the check")
        if check([os.path.join(tmp, "clean", "lib.rs")], tmp, [("clean/lib.rs", (), {"a", "b"})]) != 1:
            failures += 1
            print("module-cycles self-test: a stale allow entry passed the check")
    print(f"module-cycles self-test: {4 + 4 - failures} passed, {failures} failed")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--self-test"]:
        return self_test()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    allow: list[tuple[str, Path, set[str]]] = []
    if argv[:1] == ["--allow"]:
        allow = read_allow(argv[1])
        argv = argv[2:]
    roots = [os.path.abspath(a) for a in argv] or workspace_roots(repo)
    return check(roots, repo, allow)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

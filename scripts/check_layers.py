#!/usr/bin/env python3
"""The layering rule of docs/ARCHITECTURE.md, checked (run by scripts/test.sh, so by .ci/run).

Inside the engine crate (crates/augur/src) every module belongs to a layer, and a module
imports only from its own layer or below; modules of one layer import each other without a
cycle; and no two files import each other, directly or around a circle (a module's mod.rs
declaring and re-exporting its children is structure, not an import, and is not counted).
Between crates, the front ends (the CLI, the Python package, the server) never depend on each
other, and only the CLI may depend on the benchmark harness.

An import is what a path names, not how it is spelled: `use` trees (grouped, aliased,
`self`) and paths written in place (`crate::x::Y`, `super::x`) are resolved through every
re-export on the way (lib.rs's `pub use`, a mod.rs's `pub use child::Item`, a parent's
private `use` named through `super::`) to the module and file that define the item. So
`crate::Snapshot` counts as an import of the module that defines `Snapshot`, not of lib.rs.

Prints every violation and exits 1, or prints a one-line summary and exits 0.
`--self-test` runs the check on small fixture trees (SELF_TESTS below) instead.
"""

from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "crates" / "augur" / "src"

# From the bottom. A module imports only from its own layer or below.
LAYERS = [
    ["error", "coding", "checksum", "compression", "expiry", "key", "filename", "fs", "cache", "prefetch", "stats", "work_signal"],
    ["index"],
    ["wal", "vlog", "memtable", "sst"],
    ["version"],
    ["options", "learning", "iter", "compaction"],
    ["db"],
    ["inspect", "backup"],
    ["fuzzing", "lib"],
]
LAYER_OF = {m: i for i, layer in enumerate(LAYERS) for m in layer}

# Front-end crates and what each may not depend on.
FRONT_ENDS = {
    "crates/augur-cli": {"augur-py", "augur-server"},
    "crates/augur-py": {"augur-cli", "augur-server", "augur-bench"},
    "crates/augur-server": {"augur-cli", "augur-py", "augur-bench"},
}

USE_CRATE = re.compile(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_SUPER = re.compile(r"\b((?:super::)+)([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)")
# A `use` declaration (any visibility): its tree, up to the semicolon.
USE_DECL = re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+([^;]*);", re.M)
USE_TOKEN = re.compile(r"::|[{},*]|[A-Za-z_][A-Za-z0-9_]*")
LINE_COMMENT = re.compile(r"//.*")


def code_of(path: pathlib.Path) -> str:
    """The file's text without comments and without its `#[cfg(test)] mod tests` block."""
    text = path.read_text()
    cut = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+\w+\s*\{", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(LINE_COMMENT.sub("", line) for line in text.splitlines())


def module_path(src: pathlib.Path, path: pathlib.Path) -> list[str]:
    """`src/db/open.rs` -> ["db", "open"]; `db/mod.rs` -> ["db"]; `lib.rs` -> ["lib"]."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts or ["lib"]


def scope_of(me: list[str]) -> list[str]:
    """The module a file's relative paths start from: the crate root for lib.rs."""
    return [] if me == ["lib"] else me


def use_tree(decl: str) -> list[tuple[list[str], str]]:
    """The paths a `use` tree names, each with the name it binds: `a::{b, c::d as e, self}`
    -> [(["a", "b"], "b"), (["a", "c", "d"], "e"), (["a"], "a")]. Globs bind nothing."""
    tokens = USE_TOKEN.findall(decl)
    out: list[tuple[list[str], str]] = []

    def tree(i: int, prefix: list[str]) -> int:
        path = list(prefix)
        while i < len(tokens):
            tok = tokens[i]
            if tok == "{":
                i += 1
                while i < len(tokens) and tokens[i] != "}":
                    i = tree(i, path)
                    if i < len(tokens) and tokens[i] == ",":
                        i += 1
                return i + 1
            if tok == "*":
                return i + 1
            if tok in (",", "}"):
                break
            if tok == "as":
                alias = tokens[i + 1] if i + 1 < len(tokens) else ""
                if alias != "_":
                    out.append((path, alias))
                return i + 2
            if tok == "::":
                i += 1
                continue
            if tok == "self" and path:
                out.append((list(path), path[-1]))
                return i + 1
            path.append(tok)
            i += 1
        if path and path != prefix:
            out.append((path, path[-1]))
        return i

    tree(0, [])
    return out


class Crate:
    """An engine source tree: its modules' files, and the names each module binds by `use`
    (re-exports and private imports alike: a child module can name both through `super::`)."""

    def __init__(self, src: pathlib.Path):
        self.src = src
        self.paths = sorted(src.rglob("*.rs"))
        self.files = {tuple(module_path(src, p)): p for p in self.paths}
        self.code = {p: code_of(p) for p in self.paths}
        # module (crate root: ()) -> name -> absolute path it stands for
        self.bindings: dict[tuple[str, ...], dict[str, list[str]]] = {}
        for p in self.paths:
            scope = scope_of(module_path(src, p))
            names = self.bindings.setdefault(tuple(scope), {})
            for m in USE_DECL.finditer(self.code[p]):
                for path, name in use_tree(m.group(1)):
                    target = self.absolute(scope, path)
                    if target is not None:
                        names[name] = target

    def is_module(self, parts: list[str]) -> bool:
        return not parts or tuple(parts) in self.files

    def absolute(self, scope: list[str], path: list[str]) -> list[str] | None:
        """`path` as written in module `scope`, from the crate root; `None` for another
        crate's (`std::`, `parking_lot::`)."""
        if not path:
            return None
        head = path[0]
        if head == "crate":
            return path[1:]
        if head == "self":
            return scope + path[1:]
        if head == "super":
            ups = 0
            while ups < len(path) and path[ups] == "super":
                ups += 1
            return scope[: max(len(scope) - ups, 0)] + path[ups:]
        if self.is_module(scope + [head]):
            return scope + path
        return None

    def resolve(self, path: list[str]) -> list[str]:
        """`path` with every re-export on it replaced by what it re-exports: `crate::Snapshot`
        -> ["iter", "Snapshot"] (lib.rs) -> ["iter", "snapshot", "Snapshot"] (iter/mod.rs)."""
        seen = set()
        while tuple(path) not in seen:
            seen.add(tuple(path))
            k = len(path)
            while k > 0 and not self.is_module(path[:k]):
                k -= 1
            if k == len(path):
                break
            target = self.bindings.get(tuple(path[:k]), {}).get(path[k])
            if target is None or target[: k + 1] == path[: k + 1]:
                break
            path = target + path[k + 1 :]
        return path

    def file_of(self, parts: list[str]) -> pathlib.Path | None:
        """The file that defines the longest prefix of `parts` (a path to an item)."""
        for n in range(len(parts), 0, -1):
            f = self.files.get(tuple(parts[:n]))
            if f is not None:
                return f
        return self.files.get(("lib",))


def engine_violations(
    src: pathlib.Path = SRC, root: pathlib.Path = ROOT
) -> tuple[list[str], int, int]:
    krate = Crate(src)
    problems: list[str] = []
    module_edges: dict[str, set[str]] = {}
    file_edges: dict[pathlib.Path, set[pathlib.Path]] = {}
    for path in krate.paths:
        me = module_path(src, path)
        top = me[0]
        if top not in LAYER_OF:
            problems.append(f"{path.relative_to(root)}: module `{top}` has no layer in {__file__}")
            continue
        scope = scope_of(me)
        code = krate.code[path]
        written: list[list[str]] = []
        for m in USE_DECL.finditer(code):
            for p, _ in use_tree(m.group(1)):
                t = krate.absolute(scope, p)
                if t is not None:
                    written.append(t)
        # Paths written in place (`crate::x::Y`, `super::x`) outside `use` declarations.
        rest = USE_DECL.sub("", code)
        for m in USE_CRATE.finditer(rest):
            written.append(m.group(1).strip(":").split("::"))
        for m in USE_SUPER.finditer(rest):
            ups = m.group(1).count("super::")
            written.append(scope[: max(len(scope) - ups, 0)] + m.group(2).split("::"))
        for w in written:
            t = krate.resolve(w)
            if not t:
                continue
            other = t[0]
            shown = "::".join(w) + ("" if t == w else f" (= crate::{'::'.join(t)})")
            if other in LAYER_OF and other != top:
                module_edges.setdefault(top, set()).add(other)
                if LAYER_OF[other] > LAYER_OF[top]:
                    problems.append(
                        f"{path.relative_to(root)}: `{top}` (layer {LAYER_OF[top]}) imports "
                        f"`crate::{shown}` from `{other}` (layer {LAYER_OF[other]}), "
                        "a layer above"
                    )
            target_file = krate.file_of(t)
            if target_file is None or target_file == path:
                continue
            # A module's file using its own child modules is structure (it declares them).
            target_mod = module_path(src, target_file)
            if target_mod[: len(me)] == me or me == ["lib"]:
                continue
            file_edges.setdefault(path, set()).add(target_file)
    problems += cycles(module_edges, "modules", str)
    problems += cycles(file_edges, "files", lambda p: str(p.relative_to(root)))
    n_edges = sum(len(v) for v in file_edges.values())
    return problems, len(krate.paths), n_edges


def cycles(edges: dict, what: str, show) -> list[str]:
    """One message per strongly connected component of more than one node (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list[str] = []
    counter = [0]

    def visit(v) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                names = ", ".join(sorted(show(c) for c in comp))
                out.append(f"a cycle among {what}: {names}")

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def crate_violations() -> list[str]:
    problems = []
    for crate, forbidden in FRONT_ENDS.items():
        manifest = ROOT / crate / "Cargo.toml"
        if not manifest.exists():
            continue
        deps = set()
        section = None
        for line in manifest.read_text().splitlines():
            s = line.strip()
            if s.startswith("["):
                section = s.strip("[]")
                continue
            if section and section.endswith("dependencies") and "dev-dependencies" not in section:
                name = s.split("=")[0].strip()
                if name:
                    deps.add(name)
        for d in sorted(deps & forbidden):
            problems.append(f"{crate}/Cargo.toml: the front end depends on `{d}`")
    return problems


# `--self-test`: small source trees, each with the problems the check must report (a
# substring of each message) or none. They pin down what the check sees, so a change that
# stops it seeing an edge fails here rather than passing silently.
SELF_TESTS: list[tuple[str, dict[str, str], list[str]]] = [
    (
        "an upward import through a lib.rs re-export",
        {
            "lib.rs": "mod db;\nmod iter;\npub use db::Snapshot;\n",
            "db/mod.rs": "pub struct Snapshot;\n",
            "iter/mod.rs": "pub struct ScanOptions(pub Option<crate::Snapshot>);\n",
        },
        ["`iter` (layer 4) imports `crate::Snapshot (= crate::db::Snapshot)` from `db` (layer 5)"],
    ),
    (
        "re-exports chained through a mod.rs, a grouped `use` and an alias",
        {
            "lib.rs": "mod db;\nmod error;\nmod iter;\npub use db::Snapshot;\n",
            "error.rs": "pub enum Error {}\n",
            "db/mod.rs": "mod snapshot;\npub use snapshot::Snapshot;\n",
            "db/snapshot.rs": "pub struct Snapshot;\n",
            "iter/mod.rs": "mod scan;\n",
            "iter/scan.rs": "use crate::{error::Error, Snapshot as Snap};\n",
        },
        ["imports `crate::Snapshot (= crate::db::snapshot::Snapshot)` from `db`"],
    ),
    (
        "an upward `super::` path inside a function",
        {
            "lib.rs": "mod db;\nmod key;\n",
            "db/mod.rs": "pub struct Db;\n",
            "key.rs": "fn f() -> Option<super::db::Db> {\n    None\n}\n",
        },
        ["`key` (layer 0) imports `crate::db::Db` from `db` (layer 5)"],
    ),
    (
        "a file cycle hidden behind a mod.rs re-export",
        {
            "lib.rs": "mod version;\n",
            "version/mod.rs": "mod a;\nmod b;\npub use a::A;\npub use b::B;\n",
            "version/a.rs": "use crate::version::B;\npub struct A(B);\n",
            "version/b.rs": "pub struct B;\nfn f(_: super::A) {}\n",
        },
        ["a cycle among files: src/version/a.rs, src/version/b.rs"],
    ),
    (
        "downward imports, other crates and comments only",
        {
            "lib.rs": "mod db;\nmod iter;\npub use iter::Snapshot;\n",
            "iter/mod.rs": "mod snapshot;\npub use snapshot::Snapshot;\n",
            "iter/snapshot.rs": "use std::sync::Arc;\npub struct Snapshot(Arc<u64>);\n",
            "db/mod.rs": "use crate::Snapshot;\n// use crate::db::Db in iter would be upward\n",
        },
        [],
    ),
]


def self_test() -> int:
    import tempfile

    failed = 0
    for name, files, expected in SELF_TESTS:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in files.items():
                f = root / "src" / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text)
            problems = engine_violations(root / "src", root)[0]
        missing = [e for e in expected if not any(e in p for p in problems)]
        extra = [p for p in problems if not any(e in p for e in expected)]
        ok = not missing and not extra
        failed += not ok
        print(f"layering self-test: {'ok' if ok else 'FAILED'}: {name}")
        for e in missing:
            print(f"    not reported: {e}")
        for p in extra:
            print(f"    unexpected: {p}")
    return 1 if failed else 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    problems, n_files, n_edges = engine_violations()
    problems += crate_violations()
    if problems:
        for p in problems:
            print("layering:", p)
        print(f"layering: {len(problems)} violation(s); the rule is in docs/ARCHITECTURE.md")
        return 1
    print(f"layering: ok ({n_files} engine files, {n_edges} file imports, {len(LAYERS)} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The layering rule of docs/ARCHITECTURE.md, checked (run by scripts/test.sh, so by .ci/run).

Inside the engine crate (crates/augur/src) every module belongs to a layer, and a module
imports only from its own layer or below; modules of one layer import each other without a
cycle; and no two files import each other, directly or around a circle (a module's mod.rs
declaring and re-exporting its children is structure, not an import, and is not counted).
Between crates, the front ends (the CLI, the Python package, the server) never depend on each
other, and only the CLI may depend on the benchmark harness.

Prints every violation and exits 1, or prints a one-line summary and exits 0.
"""

from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "crates" / "augur" / "src"

# From the bottom. A module imports only from its own layer or below.
LAYERS = [
    ["error", "coding", "checksum", "compression", "key", "filename", "fs", "cache", "prefetch", "stats", "work_signal"],
    ["index"],
    ["wal", "vlog", "memtable", "sst"],
    ["version"],
    ["options", "learning", "iter", "compaction"],
    ["db"],
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
USE_SUPER = re.compile(r"\b((?:super::)+)([A-Za-z_][A-Za-z0-9_]*)")
USE_GROUP = re.compile(r"\bcrate::\{([^}]*)\}")
LINE_COMMENT = re.compile(r"//.*")


def code_of(path: pathlib.Path) -> str:
    """The file's text without comments and without its `#[cfg(test)] mod tests` block."""
    text = path.read_text()
    cut = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+\w+\s*\{", text)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(LINE_COMMENT.sub("", line) for line in text.splitlines())


def module_path(path: pathlib.Path) -> list[str]:
    """`crates/augur/src/db/open.rs` -> ["db", "open"]; `db/mod.rs` -> ["db"]."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts or ["lib"]


def file_of(parts: list[str], files: dict[tuple[str, ...], pathlib.Path]) -> pathlib.Path | None:
    """The file that defines the longest prefix of `parts` (a path to an item)."""
    for n in range(len(parts), 0, -1):
        f = files.get(tuple(parts[:n]))
        if f is not None:
            return f
    return None


def engine_violations() -> tuple[list[str], int, int]:
    paths = sorted(SRC.rglob("*.rs"))
    files = {tuple(module_path(p)): p for p in paths}
    problems: list[str] = []
    module_edges: dict[str, set[str]] = {}
    file_edges: dict[pathlib.Path, set[pathlib.Path]] = {}
    for path in paths:
        me = module_path(path)
        top = me[0]
        if top not in LAYER_OF:
            problems.append(f"{path.relative_to(ROOT)}: module `{top}` has no layer in {__file__}")
            continue
        code = code_of(path)
        targets: list[list[str]] = []
        for m in USE_CRATE.finditer(code):
            targets.append(m.group(1).strip(":").split("::"))
        for m in USE_GROUP.finditer(code):
            for item in m.group(1).split(","):
                item = item.strip().split("::")[0].strip("{} ")
                if item and item != "self":
                    targets.append([item])
        # `super::x`: item x of the enclosing module of this file's module (a mod.rs is its
        # directory's module).
        for m in USE_SUPER.finditer(code):
            ups = m.group(1).count("super::")
            targets.append(me[: len(me) - ups] + [m.group(2)])
        for t in targets:
            if not t or t[0] in ("", "self"):
                continue
            other = t[0]
            if other in LAYER_OF and other != top:
                module_edges.setdefault(top, set()).add(other)
                if LAYER_OF[other] > LAYER_OF[top]:
                    problems.append(
                        f"{path.relative_to(ROOT)}: `{top}` (layer {LAYER_OF[top]}) imports "
                        f"`crate::{'::'.join(t)}` from `{other}` (layer {LAYER_OF[other]}), "
                        "a layer above"
                    )
            target_file = file_of(t, files)
            if target_file is None or target_file == path:
                continue
            # A module's file using its own child modules is structure (it declares them).
            target_mod = module_path(target_file)
            if target_mod[: len(me)] == me:
                continue
            file_edges.setdefault(path, set()).add(target_file)
    problems += cycles(module_edges, "modules", str)
    problems += cycles(file_edges, "files", lambda p: str(p.relative_to(ROOT)))
    n_edges = sum(len(v) for v in file_edges.values())
    return problems, len(paths), n_edges


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


def main() -> int:
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

#!/usr/bin/env python3
"""docs/UNSAFE.md, checked (run by scripts/test.sh).

Counts the `unsafe` of every Rust file of the workspace, the Python crate and the fuzz
targets (blocks, `unsafe impl`s, `unsafe fn`s; not in comments, not `unsafe_code`) and
compares each file's count with the rows docs/UNSAFE.md gives it (a row's first cell is the
file's path in backticks). Also fails on any `#[allow(unsafe_code)]`: an exception to
`#![deny(unsafe_code)]` is `#[expect(unsafe_code, reason = ...)]`, so that it warns once
its `unsafe` is gone.

Prints every mismatch and exits 1, or prints a one-line summary and exits 0.
"""

from __future__ import annotations

import pathlib
import re
import sys
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "UNSAFE.md"
TREES = [ROOT / "crates", ROOT / "fuzz" / "fuzz_targets"]

UNSAFE = re.compile(r"\bunsafe\b(?!_)")
ALLOW = re.compile(r"allow\(\s*unsafe_code")
ROW = re.compile(r"^\|\s*`([^`]+\.rs)`\s*\|", re.M)


def rust_files() -> list[pathlib.Path]:
    files = []
    for tree in TREES:
        for p in tree.rglob("*.rs"):
            if "target" not in p.relative_to(ROOT).parts:
                files.append(p)
    return sorted(files)


def code_lines(path: pathlib.Path) -> list[str]:
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    return [re.sub(r"//.*", "", line) for line in text.splitlines()]


def main() -> int:
    found: Counter[str] = Counter()
    problems = []
    for p in rust_files():
        rel = str(p.relative_to(ROOT))
        for n, line in enumerate(code_lines(p), 1):
            found[rel] += len(UNSAFE.findall(line))
            if ALLOW.search(line):
                problems.append(
                    f"{rel}:{n}: #[allow(unsafe_code)]; use #[expect(unsafe_code, reason = ...)]"
                )
    listed = Counter(ROW.findall(DOC.read_text()))
    for f in sorted(set(found) | set(listed)):
        if found[f] != listed[f]:
            problems.append(
                f"{f}: {found[f]} unsafe in the code, {listed[f]} row(s) in docs/UNSAFE.md"
            )
    if problems:
        for p in problems:
            print("unsafe:", p)
        print(f"unsafe: {len(problems)} problem(s); the rules are in docs/UNSAFE.md")
        return 1
    total = sum(found.values())
    files = sum(1 for n in found.values() if n)
    print(f"unsafe: ok ({total} unsafe in {files} files, each listed in docs/UNSAFE.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

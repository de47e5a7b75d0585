#!/usr/bin/env python3
"""Fails when a .cc file under src/, tests/ or bench/ is named by no CMakeLists.txt.

Sources are listed, not globbed, so that a file missing from a checkout fails the configure. The
other side of that choice is a file added without being listed, which would silently not be built
(a test that never runs). This check closes it: every .cc must be named (as `name.cc`, or as `name`
for the fuzz targets built by gpufair_fuzzer) in the CMakeLists.txt of its directory or of a parent.
Negative fixtures (directories ending in _fixture) are never compiled and are skipped.

Usage: check_sources_listed.py ROOT
"""
import pathlib
import re
import sys


def cmake_text(directory, root):
    """The CMakeLists.txt files of `directory` and its parents up to `root`, concatenated."""
    text = []
    while True:
        lists = directory / "CMakeLists.txt"
        if lists.is_file():
            text.append(lists.read_text())
        if directory == root:
            return "\n".join(text)
        directory = directory.parent


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    missing, seen = [], 0
    for base in ("src", "tests", "bench"):
        for path in sorted((root / base).rglob("*.cc")):
            if any(part.endswith("_fixture") for part in path.relative_to(root).parts):
                continue
            seen += 1
            text = cmake_text(path.parent, root)
            named = re.search(r"(?<![\w.-])" + re.escape(path.name) + r"(?![\w.])", text)
            target = re.search(r"gpufair_fuzzer\(\s*" + re.escape(path.stem) + r"\b", text)
            if not named and not target:
                missing.append(path.relative_to(root))
    for path in missing:
        print(f"{path}: not listed in any CMakeLists.txt of its directory or above")
    if missing or seen == 0:
        return 1
    print(f"all {seen} sources are listed in CMakeLists.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())

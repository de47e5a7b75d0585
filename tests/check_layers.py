#!/usr/bin/env python3
"""Fails when a module includes a module it may not depend on.

The allowed arrows are the table "Modules" in DESIGN.md (kept here, since CI clones only this
repository). A module's files are everything under src/<module>/ (sources and private headers) and
include/gpufair/<module>/; every `#include "gpufair/<other>/..."` or `#include <gpufair/<other>/...>`
in them must name the module itself or one it may depend on. A directory under src/ or
include/gpufair/ that the table does not name is an error too, so a new module states its arrows.

Usage: check_layers.py ROOT                 exit 1 on any violation
       check_layers.py ROOT --expect A->B   exit 0 only if the violations are exactly the arrows
                                            given (repeatable), e.g. for the negative fixture
"""
import argparse
import pathlib
import re
import sys

ALLOWED = {
    "common": set(),
    "policy": {"common"},
    "codec": {"policy", "common"},
    "config": {"codec", "policy", "common"},
    "state": {"policy", "common"},
    "k8s": {"state", "codec", "config", "policy", "common"},
    "api": {"state", "policy", "codec", "common"},
    "metrics": {"policy", "common"},
    "sim": {"api", "state", "policy", "config", "codec", "common"},
}
ALLOWED["app"] = set(ALLOWED)  # app wires everything

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]gpufair/([A-Za-z0-9_]+)/')
SUFFIXES = {".h", ".hpp", ".cc", ".cpp", ".inc"}


def module_dirs(root):
    """Yields (module, directory) for every module directory present under root."""
    for base in (root / "src", root / "include" / "gpufair"):
        if not base.is_dir():
            continue
        for d in sorted(p for p in base.iterdir() if p.is_dir()):
            yield d.name, d


def scan(root):
    """Returns (violations, errors): violations as (module, used, file, line number)."""
    violations, errors = [], []
    seen = 0
    for module, directory in module_dirs(root):
        if module not in ALLOWED:
            errors.append(f"{directory.relative_to(root)}: module '{module}' is not in the table")
            continue
        allowed = ALLOWED[module] | {module}
        for path in sorted(directory.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            seen += 1
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if match and match.group(1) not in allowed:
                    violations.append((module, match.group(1), path.relative_to(root), number))
    if seen == 0:
        errors.append(f"{root}: no module sources found (wrong root?)")
    return violations, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=pathlib.Path)
    parser.add_argument("--expect", action="append", default=[], metavar="A->B",
                        help="an arrow that must be reported (the negative fixture's mode)")
    args = parser.parse_args()

    violations, errors = scan(args.root)
    for error in errors:
        print(f"error: {error}")
    for module, used, path, number in violations:
        print(f"{path}:{number}: {module} may not include {used} "
              f"({module} depends only on: {', '.join(sorted(ALLOWED[module])) or 'nothing'})")
    if errors:
        return 1
    found = {f"{module}->{used}" for module, used, _, _ in violations}
    if args.expect:
        expected = set(args.expect)
        if found != expected:
            print(f"expected exactly the violations {sorted(expected)}, found {sorted(found)}")
            return 1
        print(f"found the expected violations: {', '.join(sorted(found))}")
        return 0
    if violations:
        return 1
    print("layers hold: every module includes only the modules DESIGN.md lets it depend on")
    return 0


if __name__ == "__main__":
    sys.exit(main())

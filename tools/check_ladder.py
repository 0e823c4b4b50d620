#!/usr/bin/env python3
"""Checks the dependency ladder: no #include may point from a folder to one on a higher floor.

Floors, bottom to top (folders on one floor must not include each other either, except where
listed in SAME_FLOOR_OK). Run by CMake at configure time and by ctest; exits 1 on a violation,
naming the file, the line and both floors.
"""
import pathlib
import re
import sys

FLOORS = [
    ["runtime/core"],
    ["runtime/cpu", "runtime/cuda", "runtime/dist"],
    ["runtime/ops"],
    ["offload", "models", "policy"],
    ["engine"],
    ["experiments"],
    ["python"],
]
SOURCE_SUFFIXES = {".h", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path: str):
    """The ladder folder holding `path` (longest match), or None for folders outside it."""
    best = None
    for floor, folders in enumerate(FLOORS):
        for f in folders:
            if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best[1])):
                best = (floor, f)
    return best


def main(root: str) -> int:
    root_path = pathlib.Path(root)
    problems = []
    for folders in FLOORS:
        for top in folders:
            for src in sorted((root_path / top).rglob("*")):
                if src.suffix not in SOURCE_SUFFIXES:
                    continue
                rel = src.relative_to(root_path).as_posix()
                here = folder_of(rel)
                for lineno, line in enumerate(src.read_text(errors="replace").splitlines(), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    there = folder_of(m.group(1))
                    if there is None or there[1] == here[1]:
                        continue
                    if there[0] >= here[0]:
                        problems.append(
                            f"{rel}:{lineno}: includes {m.group(1)} ({there[1]}, floor {there[0]})"
                            f" from {here[1]} (floor {here[0]}): includes must point down the ladder")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

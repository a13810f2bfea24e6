#!/usr/bin/env python3
"""Arrows down only: every #include "..." of the C sources resolves into a folder that the
including folder may depend on (docs/contributing.md, "The map"). System headers (<...>) are
not checked. Prints each offending line and exits 1; prints a one-line count and exits 0 when
all is well. Run from anywhere: the repository root is this file's parent's parent."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder -> the folders its #include "..." lines may reach, besides its own
ALLOWED = {
    "compat": [],
    "loader": ["compat"],
    "src": ["compat", "loader", "include/ncclshim"],
    "src/nccl": ["compat", "loader", "include/ncclshim", "src"],
    "src/cuda": ["compat", "loader", "include/ncclshim", "src"],
    "src/track": ["include/ncclshim"],
    "src/comm": ["compat", "include/ncclshim", "src", "src/track"],
    "src/probe": ["compat", "loader", "include/ncclshim"],
    "src/dropin": ["compat", "loader", "include/ncclshim", "src", "src/nccl", "src/track"],
    "include/ncclshim": [],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def resolve(folder, name):
    """The folder (relative to ROOT) of the file an #include "name" in `folder` reaches, or
    None when no such file exists."""
    for base in (folder, "include"):  # the including file's folder, then -I include
        path = os.path.normpath(os.path.join(ROOT, base, name))
        if os.path.isfile(path):
            return os.path.relpath(os.path.dirname(path), ROOT)
    return None


def main():
    problems, checked = [], 0
    for folder, allowed in sorted(ALLOWED.items()):
        directory = os.path.join(ROOT, folder)
        for entry in sorted(os.listdir(directory)):
            if not entry.endswith((".c", ".h")):
                continue
            with open(os.path.join(directory, entry), encoding="utf-8") as source:
                for number, line in enumerate(source, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    checked += 1
                    target = resolve(folder, match.group(1))
                    where = "%s/%s:%d" % (folder, entry, number)
                    if target is None:
                        problems.append("%s: %s names no file" % (where, line.strip()))
                    elif target != folder and target not in allowed:
                        problems.append("%s: %s reaches %s/, which %s/ may not depend on"
                                        % (where, line.strip(), target, folder))
    for problem in problems:
        print(problem)
    print("check_includes: %d #include lines in %d folders, %d against the map"
          % (checked, len(ALLOWED), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

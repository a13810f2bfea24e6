#!/usr/bin/env python3
"""Arrows down only: every #include "..." of the C sources resolves into a folder that the
including folder may depend on (docs/contributing.md, "The map"). An include names a file of
its own folder by name, a header of include/ as "ncclshim/x.h", and a file of another folder by
its path from the repository root ("loader/dl.h", "src/internal.h"), the include directory
meson.build calls layers_inc. No include of any tracked C, C++ or CUDA file climbs with "../".
System headers (<...>) are not checked. Prints each offending line and exits 1; prints a
one-line count and exits 0 when all is well. Run from anywhere: the repository root is this
file's parent's parent. The checker is first checked on made-up lines (--self-test: only
that)."""
import os
import re
import subprocess
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


SOURCES = (".c", ".h", ".cc", ".cpp", ".cu", ".cuh")


def resolve(folder, name, exists=os.path.isfile):
    """The folder (relative to ROOT) of the file an #include "name" in `folder` reaches, or
    None when no such file exists."""
    # the including file's folder, then -I include, then -I . (layers_inc)
    for base in (folder, "include", ""):
        path = os.path.normpath(os.path.join(base, name))
        if exists(os.path.join(ROOT, path)):
            return os.path.dirname(path)
    return None


def judge(folder, name, allowed, exists=os.path.isfile):
    """What is wrong with #include "name" in `folder`, or None."""
    if ".." in name.split("/"):
        return "climbs out of its folder (name the layer from the root: \"loader/dl.h\")"
    target = resolve(folder, name, exists)
    if target is None:
        return "names no file"
    if target != folder and target not in allowed:
        return "reaches %s/, which %s/ may not depend on" % (target, folder)
    return None


def climbing_includes():
    """Every tracked C, C++ or CUDA file's #include "../...": none may be left, in any folder."""
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True,
                            check=True, text=True).stdout.split("\0")
    problems = []
    for name in listed:
        if not name.endswith(SOURCES) or not os.path.isfile(os.path.join(ROOT, name)):
            continue
        with open(os.path.join(ROOT, name), encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if match and ".." in match.group(1).split("/"):
                    problems.append('%s:%d: %s climbs out of its folder ("../")'
                                    % (name, number, line.strip()))
    return problems


def self_test():
    """The checker on made-up files: each wrong arrow is found, each right one passes."""
    files = {"loader/dl.h", "src/internal.h", "src/nccl/nccl_names.h", "src/probe/json.h",
             "include/ncclshim/status.h", "src/nccl/nccl_load.c"}

    def exists(path):
        return os.path.relpath(path, ROOT) in files

    cases = [
        ("src/nccl", "loader/dl.h", None),
        ("src/nccl", "src/internal.h", None),
        ("src/nccl", "nccl_names.h", None),
        ("src/nccl", "ncclshim/status.h", None),
        ("src/dropin", "src/nccl/nccl_names.h", None),
        ("src/nccl", "../internal.h", "climbs"),
        ("src/nccl", "../../loader/dl.h", "climbs"),
        ("loader", "src/internal.h", "reaches src/"),
        ("src/probe", "src/internal.h", "reaches src/"),
        ("src/comm", "loader/dl.h", "reaches loader/"),
        ("include/ncclshim", "src/internal.h", "reaches src/"),
        ("src/nccl", "loader/absent.h", "names no file"),
    ]
    failures = 0
    for folder, name, want in cases:
        got = judge(folder, name, ALLOWED[folder], exists)
        if (want is None) != (got is None) or (want is not None and want not in got):
            print("self-test: %s/ #include \"%s\": got %r, want %r" % (folder, name, got, want))
            failures += 1
    print("check_includes self-test: %d cases, %d wrong" % (len(cases), failures))
    return 1 if failures else 0


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
                    problem = judge(folder, match.group(1), allowed)
                    if problem:
                        problems.append("%s/%s:%d: %s %s"
                                        % (folder, entry, number, line.strip(), problem))
    # the folders of the map were judged above; the "../" rule holds in every other one too
    problems += [p for p in climbing_includes()
                 if os.path.dirname(p.split(":")[0]) not in ALLOWED]
    for problem in problems:
        print(problem)
    print("check_includes: %d #include lines in %d folders, %d against the map"
          % (checked, len(ALLOWED), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else self_test() or main())

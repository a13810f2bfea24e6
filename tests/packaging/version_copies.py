#!/usr/bin/env python3
"""ncclshim's version has one home, meson.build's project version; the copies that cannot be
generated from it must say the same (a release bumps meson.build and this test names the
rest):

    version_copies.py VERSION SOURCE_ROOT

  - bindings/python/ncclshim/__init__.py: __version__ (the package's, the wheel's);
  - bindings/rust/Cargo.toml: [package] version (cargo reads no meson);
  - the installed files and archives the user docs name with a version (README.md,
    docs/*.md: libncclshim.so.X.Y.Z, ncclshim-X.Y.Z-...): the current release's names.
Prints each copy that differs and exits 1; 0 when all agree.
"""
import glob
import os
import re
import sys

NAMED = re.compile(r"\b(?:libncclshim(?:-nccl)?\.so\.|ncclshim-)(\d+\.\d+\.\d+)\b")


def copies(root):
    """(where, version) of every copy."""
    found = []
    init = os.path.join(root, "bindings", "python", "ncclshim", "__init__.py")
    with open(init, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r'__version__ = "([^"]*)"', line)
            if m:
                found.append(("bindings/python/ncclshim/__init__.py:%d" % n, m.group(1)))
    cargo = os.path.join(root, "bindings", "rust", "Cargo.toml")
    with open(cargo, encoding="utf-8") as f:
        section = None
        for n, line in enumerate(f, 1):
            if line.startswith("["):
                section = line.strip()
            m = re.match(r'version = "([^"]*)"', line)
            if m and section == "[package]":
                found.append(("bindings/rust/Cargo.toml:%d" % n, m.group(1)))
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for m in NAMED.finditer(line):
                    found.append(("%s:%d (%s)" % (os.path.relpath(doc, root), n, m.group(0)),
                                  m.group(1)))
    return found


def main(version, root):
    found = copies(root)
    wrong = [(where, v) for where, v in found if v != version]
    for where, v in wrong:
        print("%s says %s; meson.build's project version is %s" % (where, v, version))
    print("version_copies: %d copies of %s, %d differ" % (len(found), version, len(wrong)))
    kinds = {w.split(":")[0] for w, _ in found}
    for needed in ("bindings/python/ncclshim/__init__.py", "bindings/rust/Cargo.toml"):
        if needed not in kinds:
            print("%s: no version found (the check reads the wrong line?)" % needed)
            return 1
    return 1 if wrong else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))

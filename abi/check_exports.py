#!/usr/bin/env python3
"""Compare a shared library's exported symbols and SONAME with a committed list.

    check_exports.py LIST LIBRARY            exit 0 when they match, 1 otherwise
    check_exports.py --update LIST LIBRARY   rewrite LIST from LIBRARY

LIST holds one line "soname NAME" and then one exported name per line, as
`nm -D --defined-only` prints it (with its symbol version: name@@NCCLSHIM_0); '#' starts a
comment. A name in the list that the library no longer exports (removed, renamed, moved to
another version node) breaks every program linked against the SONAME: that fails. A name the
library exports that the list lacks also fails, so that every new export is a decision
recorded in review. See docs/reference.md, "ABI and SONAME".
"""
import os
import subprocess
import sys

from abi_lists import command_line, from_root, update_command

HEADER = """# Exported symbols of {lib}, checked by abi/check_exports.py
# (meson test --suite packaging). Regenerate after adding an export on purpose:
#   python3 abi/check_exports.py --update abi/{list} {built}
# Never remove or rename a line without bumping the SONAME (docs/reference.md).
"""


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if line.strip()})


def soname(library):
    out = subprocess.run(["readelf", "-d", library], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if "(SONAME)" in line:
            return line.split("[", 1)[1].rstrip("]")
    return None


def read_list(path):
    names, so = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("soname "):
                so = line.split(None, 1)[1]
            else:
                names.append(line)
    return so, names


def main(argv):
    parsed = command_line(argv, __doc__)
    if parsed is None:
        return 2
    update, list_path, library = parsed
    names, so = exported(library), soname(library)
    listed = list_path.rsplit("/", 1)[-1]
    if update:
        with open(list_path, "w", encoding="utf-8") as f:
            f.write(HEADER.format(lib=so, list=listed, built=from_root(list_path, library)))
            f.write(f"soname {so}\n")
            f.writelines(n + "\n" for n in names)
        print(f"{list_path}: {len(names)} exports of {so}")
        return 0

    want_so, want = read_list(list_path)
    list_path = os.path.normpath(os.path.abspath(list_path))
    fix = update_command("check_exports.py", list_path, library)
    ok = True
    if so != want_so:
        ok = False
        print(f"SONAME is {so}, the committed list says {want_so}. A SONAME bump is an ABI "
              f"break: follow docs/reference.md (\"ABI and SONAME\"), then regenerate the list:"
              f"\n  {fix}")
    removed = sorted(set(want) - set(names))
    added = sorted(set(names) - set(want))
    if removed:
        ok = False
        print(f"{len(removed)} export(s) of {so} disappeared (removed, renamed or re-versioned)."
              f" Programs linked against {so} that use them will no longer load:")
        print("".join(f"  - {n}\n" for n in removed), end="")
        print("Restore them; or break the ABI on purpose: bump the SONAME as docs/reference.md "
              "says and regenerate the list.")
    if added:
        ok = False
        print(f"{len(added)} new export(s) of {so} missing from {list_path}:")
        print("".join(f"  + {n}\n" for n in added), end="")
        print(f"If they are meant to be public API, add them (and keep them from now on):\n"
              f"  {fix}\nOtherwise keep them unexported (hidden visibility, or out of the "
              "version script).")
    if ok:
        print(f"{so}: {len(names)} exports match {list_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

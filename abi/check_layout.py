#!/usr/bin/env python3
"""Compare the layout of ncclshim's public structs, tables and enums with a committed list.

    check_layout.py LIST PROGRAM            exit 0 when they match, 1 otherwise, 77 skipped
    check_layout.py --update LIST PROGRAM   rewrite LIST from PROGRAM's output

PROGRAM is abi/layout.c built against the current headers; it prints "key value" lines
(field offsets, enumerator values, sizes of frozen types). A committed line whose value
changed or that disappeared is an ABI break: programs compiled against the old headers read
the wrong field, call the wrong table entry or test the wrong bit. A new line fails too,
until it is recorded, so that the next change to it is caught. Rules: docs/reference.md,
"ABI and SONAME".
"""
import os
import subprocess
import sys

from abi_lists import command_line, from_root, update_command

HEADER = """# Layout of ncclshim's public structs, tables and enums (LP64), checked by
# abi/check_layout.py (meson test --suite packaging). New fields and rows go at the end;
# after adding some, regenerate:
#   python3 abi/check_layout.py --update abi/layout.txt {program}
# A changed or removed line is an ABI break: docs/reference.md, "ABI and SONAME".
"""


def parse(lines):
    pairs = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            key, value = line.rsplit(None, 1)
            pairs[key] = value
    return pairs


def main(argv):
    parsed = command_line(argv, __doc__)
    if parsed is None:
        return 2
    update, list_path, program = parsed
    proc = subprocess.run([program], capture_output=True, text=True)
    if proc.returncode == 77:
        print(proc.stdout.strip())
        return 77
    if proc.returncode != 0:
        print(f"{program} failed ({proc.returncode}): {proc.stderr}")
        return 1
    lines = proc.stdout.splitlines()
    now = parse(lines)
    if update:
        with open(list_path, "w", encoding="utf-8") as f:
            f.write(HEADER.format(program=from_root(list_path, program)))
            f.writelines(line + "\n" for line in lines)
        print(f"{list_path}: {len(now)} entries")
        return 0

    with open(list_path, encoding="utf-8") as f:
        committed = parse(f)
    list_path = os.path.normpath(os.path.abspath(list_path))
    fix = update_command("check_layout.py", list_path, program)
    changed = [k for k in committed if k in now and now[k] != committed[k]]
    removed = [k for k in committed if k not in now]
    added = [k for k in now if k not in committed]
    if changed:
        print(f"{len(changed)} ABI value(s) changed: programs built against the old headers "
              "break. Put new fields and rows at the end, never in the middle:")
        print("".join(f"  {k}: {committed[k]} -> {now[k]}\n" for k in changed), end="")
    if removed:
        print(f"{len(removed)} field(s), row(s) or enumerator(s) disappeared (removed or "
              "renamed): an ABI break:")
        print("".join(f"  - {k}\n" for k in removed), end="")
    if changed or removed:
        print("Restore them; or break the ABI on purpose (bump the SONAME, docs/reference.md) "
              f"and regenerate the list:\n  {fix}")
    if added:
        print(f"{len(added)} new entr(y/ies), not yet in {list_path}:")
        print("".join(f"  + {k} {now[k]}\n" for k in added), end="")
        print(f"If they are appended (every other line unchanged), record them:\n  {fix}")
    if changed or removed or added:
        return 1
    print(f"{len(now)} layout entries match {list_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

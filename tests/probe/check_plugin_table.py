#!/usr/bin/env python3
"""Checks NCCLSHIM_PLUGIN_ABIS against a real NCCL library: the plugin symbol names NCCL's
loaders look up (`dlsym(lib, "ncclNetPlugin_v11")`) are string literals in its read-only
data, so the set of plugin-shaped strings in the file is the set of symbols that release looks
up. For a release the table lists as checked, the two must be equal; for another, the strings
are printed, so that the release can be added to the table from them.
   check_plugin_table.py HEADER LIBRARY...
Exit 0 when every checked release agrees (or none of the libraries is a checked release),
1 on a difference, 77 when no library given exists."""
import os
import re
import sys

# A whole string (NUL before and after); the literal "nccl" first keeps the scan of a 200 MB
# library to about a second.
SHAPE = re.compile(rb"nccl(?:(?:Net|CollNet|Tuner|Env|Gin|Rma)Plugin|Profiler)_v[0-9]{1,3}\x00")
BANNER = re.compile(rb"NCCL version ([0-9]+)\.([0-9]+)\.([0-9]+)")


def table(header):
    text = open(header, encoding="utf-8").read()
    rows = re.findall(r'X\((\w+),\s*"(\w+)",\s*([01]),\s*(\d+),\s*(\d+)\)', text)
    checked = [int(v) for v in re.findall(r"X\((\d+)\)", text.split(
        "NCCLSHIM_PLUGIN_CHECKED_RELEASES(X)", 1)[1].split("\n", 1)[0])]
    return [(s, int(first), int(last)) for _, s, _, first, last in rows], checked


def looked_up(rows, version):
    return {s for s, first, last in rows if version >= first and (last == 0 or version <= last)}


def main():
    rows, checked = table(sys.argv[1])
    seen, failed = 0, False
    for path in dict.fromkeys(os.path.realpath(p) for p in sys.argv[2:]):  # each file once
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        seen += 1
        banner = BANNER.search(data)
        if banner is None:
            print("%s: no NCCL banner, not checked" % path)
            continue
        major, minor, patch = map(int, banner.groups())
        version = major * 10000 + minor * 100 + patch
        found = {m.group(0)[:-1].decode() for m in SHAPE.finditer(data)
                 if m.start() == 0 or data[m.start() - 1] == 0}
        name = "%d.%d.%d" % (major, minor, patch)
        if version not in checked:
            print("%s (%s, not a checked release) looks up: %s" % (
                path, name, " ".join(sorted(found, key=lambda s: (s.rsplit("_v", 1)[0],
                                                                  int(s.rsplit("_v", 1)[1]))))))
            continue
        expected = looked_up(rows, version)
        if found == expected:
            print("%s (%s): the table agrees (%d symbols)" % (path, name, len(found)))
        else:
            failed = True
            print("%s (%s): the table differs: in the file only: %s; in the table only: %s" % (
                path, name, sorted(found - expected), sorted(expected - found)))
    if seen == 0:
        print("no NCCL library to check")
        return 77
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""docs/reference.md's table of status codes against status.h's NCCLSHIM_STATUSES: the same
values and names, in the same order, so that a status added to the list is documented.

    status_docs.py include/ncclshim/status.h docs/reference.md
"""
import re
import sys


def list_rows(header):
    """(value, name) of each X(NAME, value, "sentence") row of NCCLSHIM_STATUSES."""
    text = open(header, encoding="utf-8").read()
    body = text.split("#define NCCLSHIM_STATUSES(X)", 1)[1].split("\n\n", 1)[0]
    return [(int(v), n) for n, v in re.findall(r"X\((\w+), (\d+), ", body)]


def doc_rows(doc):
    """(value, name) of each row of the table under "## Status codes"."""
    text = open(doc, encoding="utf-8").read()
    section = text.split("\n## Status codes\n", 1)[1].split("\n## ", 1)[0]
    return [(int(v), n) for v, n in re.findall(r"^\| (\d+) \| `(\w+)` \|", section, re.M)]


def main():
    header, doc = sys.argv[1:3]
    want, have = list_rows(header), doc_rows(doc)
    if not want:
        print(f"no NCCLSHIM_STATUSES rows in {header}")
        return 1
    if want != have:
        print(f"{doc}'s status table differs from NCCLSHIM_STATUSES in {header}:")
        print(f"  the list: {want}")
        print(f"  the docs: {have}")
        return 1
    print(f"{len(want)} statuses, documented in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())

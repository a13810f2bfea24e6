#!/usr/bin/env python3
"""watchdog.h against docs/reference.md's "Watchdog calls": every status a call's comment
names (an upper-case status name of status.h) is in that call's row of the table, and every
call of the header has a row, so that a status a call can return is documented.

    watchdog_status_docs.py include/ncclshim/status.h include/ncclshim/watchdog.h \
        docs/reference.md
"""
import re
import sys


def statuses(header):
    text = open(header, encoding="utf-8").read()
    body = text.split("#define NCCLSHIM_STATUSES(X)", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"X\((\w+), \d+, ", body))


def calls(header, names):
    """{call: statuses its comment names} for each NCCLSHIM_API function of the header."""
    text = open(header, encoding="utf-8").read()
    found = {}
    for comment, call in re.findall(r"/\*((?:(?!\*/).)*)\*/\s*NCCLSHIM_API [^(]*?(\w+)\(",
                                    text, re.S):
        words = set(re.findall(r"\b[A-Z][A-Z_]+\b", comment))
        found[call] = words & names
    return found


def rows(doc):
    text = open(doc, encoding="utf-8").read()
    if "\n## Watchdog calls\n" not in text:
        return {}
    section = text.split("\n## Watchdog calls\n", 1)[1].split("\n## ", 1)[0]
    return {call: set(re.findall(r"`([A-Z_]+)`", cells))
            for call, cells in re.findall(r"^\| `(\w+)` \| (.*) \|$", section, re.M)}


def main():
    status_h, watchdog_h, doc = sys.argv[1:4]
    names = statuses(status_h)
    documented = rows(doc)
    problems = []
    for call, named in sorted(calls(watchdog_h, names).items()):
        if call == "ncclshim_comm_failure":
            continue  # returns a message, not a status
        if call not in documented:
            problems.append(f"{call}: no row in {doc}'s \"Watchdog calls\"")
        elif named - documented[call]:
            problems.append(f"{call}: {sorted(named - documented[call])} named in {watchdog_h}, "
                            f"not in its row of {doc}")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{len(documented)} watchdog calls, their statuses documented")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

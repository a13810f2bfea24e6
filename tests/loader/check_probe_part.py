#!/usr/bin/env python3
"""The probe holds one loader. Its process maps libncclshim, whose hidden copy of the whole
loader holds the search; of the loader's files the probe itself links only the part that
keeps no state (loader/meson.build's loader_probe_lib). Checked on the built files: every
ncshl_ symbol the probe defines comes from that part, and no object of the part has writable
data (.data, .bss, thread-local), so nothing of the loader's is there twice with a state.
A sanitizer build's objects carry the sanitizer's own data: there only the first check runs.
   check_probe_part.py PROBE PROBE_PART_ARCHIVE SANITIZE (meson's b_sanitize)"""
import subprocess
import sys

WRITABLE = (".data", ".bss", ".tdata", ".tbss")


def defined(path):
    """The ncshl_ names path defines (an executable's symbol table, or an archive's)."""
    out = subprocess.run(["nm", "-P", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[0] for line in out.splitlines()
            if line.startswith("ncshl_") and len(line.split()) >= 2}


def writable_sections(archive):
    """'member: section (size)' for each writable section of nonzero size."""
    out = subprocess.run(["size", "-A", archive], capture_output=True, text=True,
                         check=True).stdout
    found, member = [], None
    for line in out.splitlines():
        parts = line.split()
        if "(ex" in line:
            member = parts[0]
        elif len(parts) >= 2 and parts[0] in WRITABLE and parts[1] != "0":
            found.append("%s: %s (%s bytes)" % (member, parts[0], parts[1]))
    return found


def main(probe, part, sanitize):
    problems = []
    part_names = defined(part)
    if not part_names:
        problems.append("%s defines no ncshl_ symbol: not the loader's part" % part)
    beyond = sorted(defined(probe) - part_names)
    if beyond:
        problems.append("the probe links loader code beyond its stateless part: "
                        + " ".join(beyond))
    if sanitize in ("", "none"):
        problems += ["the probe's part of the loader keeps state: " + w
                     for w in writable_sections(part)]
    else:
        print("writable data not checked: a sanitizer build (%s)" % sanitize)
    for problem in problems:
        print(problem)
    print("check_probe_part: %d ncshl_ symbols in the part, %d problems"
          % (len(part_names), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))

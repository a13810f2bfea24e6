#!/usr/bin/env python3
"""Policy check for shipped binaries, in the manner of auditwheel's manylinux check.

    check_glibc_policy.py [--baseline 2.17] [--bind-now] [--build-tree] FILE...

For each ELF file (x86-64 or aarch64, read with `readelf`, or $READELF):
  - every GLIBC_* version it needs (versions of libncclshim's own aside) is at most the
    baseline; GLIBC_PRIVATE and versions that are not numbers fail too; the message names
    each symbol bound to such a version;
  - every NEEDED library is a glibc 2.17 library (libc, libdl, libpthread, libm, librt) or
    ncclshim's own libncclshim.so.<major>;
  - a function that glibc 2.17 keeps in libdl.so.2 or libpthread.so.0 comes with that library
    NEEDED (on glibc 2.34 and later the functions are in libc.so.6 and the two are stubs, so a
    link with --as-needed drops them and the binary then fails on old glibc);
  - RPATH and RUNPATH entries are relative to $ORIGIN (never a path into the build tree;
    --build-tree lets meson's placeholder through, which `meson install` removes);
  - the stack is not executable (a PT_GNU_STACK without the X flag);
  - RELRO (PT_GNU_RELRO), and with --bind-now also BIND_NOW (DT_FLAGS or DT_FLAGS_1).
The check is static: it reads what the binary asks of the dynamic loader, it runs nothing.
Exit status: 0 all files pass, 1 a file fails (each problem on its own line), 2 usage error.
"""
import argparse
import os
import re
import subprocess
import sys

ALLOWED_NEEDED = {"libc.so.6", "libdl.so.2", "libpthread.so.0", "libm.so.6", "librt.so.1"}
OWN_LIBRARY = re.compile(r"libncclshim\.so\.\d+$")

# In libdl.so.2 up to glibc 2.33.
LIBDL_FUNCTIONS = {"dladdr", "dladdr1", "dlclose", "dlerror", "dlinfo", "dlmopen", "dlopen",
                   "dlsym", "dlvsym"}
# The pthread_* functions glibc 2.17's libc.so.6 itself exports; every other pthread_*
# function is in libpthread.so.0 there.
LIBC_PTHREAD_FUNCTIONS = {
    "pthread_attr_destroy", "pthread_attr_getdetachstate", "pthread_attr_getinheritsched",
    "pthread_attr_getschedparam", "pthread_attr_getschedpolicy", "pthread_attr_getscope",
    "pthread_attr_init", "pthread_attr_setdetachstate", "pthread_attr_setinheritsched",
    "pthread_attr_setschedparam", "pthread_attr_setschedpolicy", "pthread_attr_setscope",
    "pthread_cond_broadcast", "pthread_cond_destroy", "pthread_cond_init",
    "pthread_cond_signal", "pthread_cond_timedwait", "pthread_cond_wait",
    "pthread_condattr_destroy", "pthread_condattr_init", "pthread_equal", "pthread_exit",
    "pthread_getschedparam", "pthread_mutex_destroy", "pthread_mutex_init",
    "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_self", "pthread_setcancelstate",
    "pthread_setcanceltype", "pthread_setschedparam"}


def readelf(*args):
    tool = os.environ.get("READELF", "readelf")
    proc = subprocess.run([tool, "-W"] + list(args), capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError("%s %s: %s" % (tool, " ".join(args), proc.stderr.strip()))
    return proc.stdout


def version_key(name):
    """(2, 17) for GLIBC_2.17; None for GLIBC_PRIVATE and other names that are not numbers."""
    m = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)*)", name)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def dynamic_entries(path):
    """{tag: [values]} of the dynamic section: NEEDED, RPATH, RUNPATH, FLAGS, FLAGS_1."""
    entries = {}
    for line in readelf("-d", path).splitlines():
        m = re.match(r"\s*0x[0-9a-f]+\s+\((\w+)\)\s+(.*)$", line)
        if m:
            value = m.group(2)
            bracket = re.search(r"\[(.*)\]", value)
            entries.setdefault(m.group(1), []).append(bracket.group(1) if bracket else value)
    return entries


def segments(path):
    """{type: flags} of the program headers (GNU_STACK, GNU_RELRO, ...)."""
    found = {}
    for line in readelf("-l", path).splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0].startswith(("GNU_", "LOAD", "DYNAMIC")):
            # Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg... Align: flags are the
            # letters between the sizes and the alignment.
            found[fields[0]] = "".join(fields[6:-1])
    return found


def imports(path):
    """[(symbol, version)] of the undefined dynamic symbols that carry a version."""
    out = []
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[6] == "UND" and "@" in fields[7]:
            name, version = fields[7].split("@", 1)
            out.append((name, version.lstrip("@")))
    return out


def needed_versions(path):
    """Every version name in the binary's version needs, with the file it was taken from."""
    out, current = [], None
    for line in readelf("-V", path).splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            current = m.group(1)
        m = re.search(r"Name: (\S+)\s+Flags", line)
        if m and current:
            out.append((m.group(1), current))
    return out


def check_file(path, baseline, bind_now, build_tree):
    problems = []
    name = os.path.basename(path)
    base_key = version_key("GLIBC_" + baseline)

    symbols = imports(path)
    too_new = {}
    for version, library in needed_versions(path):
        if OWN_LIBRARY.match(library):
            continue
        if not version.startswith("GLIBC_"):
            problems.append("needs version %s of %s, which is not glibc's" % (version, library))
            continue
        key = version_key(version)
        if key is None or key > base_key:
            too_new[version] = [s for s, v in symbols if v == version]
    for version, users in sorted(too_new.items()):
        named = ", ".join(sorted(users)) or "no symbol named"
        problems.append("needs %s, above the baseline GLIBC_%s: %s (pin in "
                        "compat/glibc_baseline.h)" % (version, baseline, named))

    dynamic = dynamic_entries(path)
    needed = dynamic.get("NEEDED", [])
    for lib in needed:
        if lib not in ALLOWED_NEEDED and not OWN_LIBRARY.match(lib):
            problems.append("NEEDED %s is not a glibc 2.17 library nor libncclshim" % lib)
    names = {s for s, v in symbols if v.startswith("GLIBC_")}
    for lib, users in [("libdl.so.2", sorted(names & LIBDL_FUNCTIONS)),
                       ("libpthread.so.0", sorted(
                           s for s in names
                           if s.startswith("pthread_") and s not in LIBC_PTHREAD_FUNCTIONS))]:
        if users and lib not in needed:
            problems.append("calls %s, which glibc 2.17 has in %s, but %s is not NEEDED"
                            % (", ".join(users), lib, lib))

    for tag in ["RPATH", "RUNPATH"]:
        for value in dynamic.get(tag, []):
            for entry in value.split(":"):
                if build_tree and re.fullmatch("X+", entry):
                    continue  # meson's room for the install RUNPATH, gone once installed
                if not entry.startswith(("$ORIGIN", "${ORIGIN}")):
                    problems.append("%s entry %r is not relative to $ORIGIN" % (tag, entry))

    segs = segments(path)
    if "GNU_STACK" not in segs:
        problems.append("no PT_GNU_STACK: the stack would be executable")
    elif "E" in segs["GNU_STACK"]:
        problems.append("executable stack (PT_GNU_STACK flags %s)" % segs["GNU_STACK"])
    if "GNU_RELRO" not in segs:
        problems.append("no RELRO (PT_GNU_RELRO)")
    flags = " ".join(dynamic.get("FLAGS", []) + dynamic.get("FLAGS_1", []))
    if bind_now and not re.search(r"\bBIND_NOW\b|\bNOW\b", flags):
        problems.append("no BIND_NOW (DT_FLAGS %r)" % flags)

    if problems:
        for p in problems:
            print("FAIL %s: %s" % (name, p))
        return False
    newest = max((v for v, _ in needed_versions(path) if version_key(v)), key=version_key,
                 default="none")
    print("ok %s: newest glibc version %s, %d versioned imports, NEEDED %s%s" % (
        name, newest, len(symbols), " ".join(needed) or "none",
        ", BIND_NOW" if bind_now else ""))
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="2.17", help="newest glibc version allowed")
    parser.add_argument("--bind-now", action="store_true", help="require BIND_NOW as well")
    parser.add_argument("--build-tree", action="store_true",
                        help="FILE is in meson's build tree, not yet installed")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args()
    if version_key("GLIBC_" + args.baseline) is None:
        parser.error("--baseline %r is not a version like 2.17" % args.baseline)
    ok = True
    for path in args.files:
        try:
            ok = check_file(path, args.baseline, args.bind_now, args.build_tree) and ok
        except OSError as e:
            print("FAIL %s: %s" % (path, e))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

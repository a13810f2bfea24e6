#!/usr/bin/env python3
"""Self-test of check_glibc_policy.py: builds small shared libraries with $CC, each breaking one
rule, and expects the check to fail naming the problem; a library that keeps every rule must
pass. Environment: CC (the compiler command), SOURCE_ROOT. Exit status 0 pass, 1 fail."""
import os
import shlex
import subprocess
import sys
import tempfile

SOURCE_ROOT = os.environ["SOURCE_ROOT"]
CC = shlex.split(os.environ["CC"])
CHECK = os.path.join(SOURCE_ROOT, "abi", "check_glibc_policy.py")
BASELINE_H = os.path.join(SOURCE_ROOT, "compat", "glibc_baseline.h")

PINNED_DLOPEN = "#include <dlfcn.h>\nvoid *f(void) { return dlopen(\"x\", RTLD_NOW); }\n"
PLAIN = "#include <string.h>\nunsigned long f(const char *s) { return strlen(s); }\n"
NEW_FUNCTION = ("#include <stdlib.h>\n"
                "void *f(void *p) { return reallocarray(p, 2, 8); }\n")  # GLIBC_2.26

# name: (source, compiler and linker flags, check flags, expected text or None to pass)
CASES = {
    "good": (PINNED_DLOPEN, ["-include", BASELINE_H, "-Wl,-z,relro,-z,now", "-Wl,--no-as-needed",
                             "-l:libdl.so.2"], ["--bind-now"], None),
    "too-new": (NEW_FUNCTION, ["-Wl,-z,relro"], [], "reallocarray"),
    "libdl-dropped": (PINNED_DLOPEN, ["-include", BASELINE_H, "-Wl,-z,relro", "-Wl,--as-needed"],
                      [], "calls dlopen, which glibc 2.17 has in libdl.so.2"),
    "foreign-needed": (PLAIN, ["-Wl,-z,relro", "-Wl,--no-as-needed", "-L.", "-lfixture"], [],
                       "NEEDED libfixture.so"),
    "build-rpath": (PLAIN, ["-Wl,-z,relro", "-Wl,-rpath,/tmp/build/src"], [],
                    "'/tmp/build/src' is not relative to $ORIGIN"),
    "exec-stack": (PLAIN, ["-Wl,-z,relro", "-Wl,-z,execstack"], [], "executable stack"),
    "no-relro": (PLAIN, ["-Wl,-z,norelro"], [], "no RELRO"),
    "lazy": (PLAIN, ["-Wl,-z,relro", "-Wl,-z,lazy"], ["--bind-now"], "no BIND_NOW"),
}


def build(tmp, name, source, flags):
    src = os.path.join(tmp, name + ".c")
    with open(src, "w", encoding="utf-8") as f:
        f.write(source)
    out = os.path.join(tmp, "lib%s.so" % name)
    subprocess.run(CC + ["-shared", "-fPIC", "-D_GNU_SOURCE", "-o", out, src] + flags,
                   cwd=tmp, check=True)
    return out


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ncclshim-policy-") as tmp:
        build(tmp, "fixture", PLAIN, [])
        for name, (source, flags, check_flags, expected) in CASES.items():
            lib = build(tmp, name, source, flags)
            proc = subprocess.run([sys.executable, CHECK] + check_flags + [lib],
                                  capture_output=True, text=True)
            out = proc.stdout + proc.stderr
            if expected is None:
                ok = proc.returncode == 0
            else:
                ok = proc.returncode == 1 and expected in out
            print("%s %s: exit %d\n  %s" % ("ok" if ok else "FAIL", name, proc.returncode,
                                            out.strip().replace("\n", "\n  ")))
            failures += not ok
    print("%d of %d cases as expected" % (len(CASES) - failures, len(CASES)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""What the probe tests share (imported from this folder, the scripts' own): how a probe is
started (the cross build's wrapper, the valgrind job's PROBE_VALGRIND) and what they read
from ELF files themselves: the probe's program interpreter (to start it through ld.so) and a
file's machine (to skip a fake of another architecture)."""
import os
import shlex
import subprocess
import tempfile

# PROBE_VALGRIND: valgrind and its options (.ci/run's valgrind job); empty otherwise.
VALGRIND = shlex.split(os.environ.get("PROBE_VALGRIND", ""))
VALGRIND_FAILED = 99  # valgrind's exit status on an error; the probe's own are 0, 1, 2
# A cross build's exe_wrapper (qemu-aarch64), which meson gives its tests: the kernel cannot
# start the target's ld.so by itself without binfmt_misc. Empty in a native build.
WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))


def run_probe_command(cmd, valgrind_cmd, **kwargs):
    """subprocess.run(cmd, capture_output=True, **kwargs), or with PROBE_VALGRIND set
    `valgrind_cmd` under valgrind instead: its summary lines go to the test's log (where
    .ci/run counts them), and a memcheck error or a definite leak raises AssertionError."""
    if not VALGRIND:
        return subprocess.run(cmd, capture_output=True, **kwargs)
    log = tempfile.NamedTemporaryFile(prefix="probe-valgrind-", suffix=".log", delete=False)
    log.close()
    try:
        proc = subprocess.run(VALGRIND + ["--error-exitcode=%d" % VALGRIND_FAILED,
                                          "--log-file=" + log.name, *valgrind_cmd],
                              capture_output=True, **kwargs)
        with open(log.name, encoding="utf-8", errors="replace") as f:
            report = f.read()
    finally:
        os.unlink(log.name)
    for line in report.splitlines():
        if "ERROR SUMMARY" in line or "definitely lost:" in line:
            print(line, flush=True)
    if proc.returncode == VALGRIND_FAILED or "ERROR SUMMARY: 0 errors" not in report:
        raise AssertionError("valgrind on %s:\n%s" % (" ".join(map(str, valgrind_cmd)), report))
    return proc


def interpreter(program):
    """The PT_INTERP path of `program` (the first "/lib..." string of its first 4 KiB)."""
    with open(program, "rb") as f:
        data = f.read(4096)
    start = data.index(b"/lib")
    return data[start:data.index(b"\0", start)].decode()


def elf_machine(path):
    """The ELF file's e_machine (62 x86-64, 183 aarch64, ...), None when it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def sanitized(path):
    """True when the ELF file was built with a sanitizer (ASan, TSan): it cannot be preloaded
    into, or loaded by, a process whose sanitizer runtime did not come first."""
    with open(path, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data

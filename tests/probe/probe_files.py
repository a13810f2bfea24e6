"""What the probe tests share (imported from this folder, the scripts' own): how a probe is
started (the cross build's wrapper, the valgrind job's PROBE_VALGRIND, ProbeRunner) and what
they read from ELF files themselves: the probe's program interpreter (to start it through
ld.so) and a file's machine (to skip a fake of another architecture)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import unittest

# PROBE_VALGRIND: valgrind and its options (.ci/run's valgrind job); empty otherwise.
VALGRIND = shlex.split(os.environ.get("PROBE_VALGRIND", ""))
VALGRIND_FAILED = 99  # valgrind's exit status on an error; the probe's own are 0, 1, 2
# meson test's --timeout-multiplier (valgrind, qemu), for the tests' own time limits.
TIMEOUT_MULTIPLIER = float(os.environ.get("MESON_TEST_TIMEOUT_MULTIPLIER", "1") or 1)
# A cross build's exe_wrapper (qemu-aarch64), which meson gives its tests: the kernel cannot
# start the target's ld.so by itself without binfmt_misc. Empty in a native build.
WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))


def run_probe_command(cmd, valgrind_cmd, stdout=subprocess.PIPE, **kwargs):
    """subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, **kwargs), or with
    PROBE_VALGRIND set `valgrind_cmd` under valgrind instead: its summary lines go to the
    test's log (where .ci/run counts them), and a memcheck error or a definite leak raises
    AssertionError."""
    kwargs.update(stdout=stdout, stderr=subprocess.PIPE)
    if not VALGRIND:
        return subprocess.run(cmd, **kwargs)
    log = tempfile.NamedTemporaryFile(prefix="probe-valgrind-", suffix=".log", delete=False)
    log.close()
    try:
        proc = subprocess.run(VALGRIND + ["--error-exitcode=%d" % VALGRIND_FAILED,
                                          "--log-file=" + log.name, *valgrind_cmd], **kwargs)
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


class ProbeRunner:
    """How one test script starts the probe under test: through the probe's own ld.so with
    no ld.so cache (--inhibit-cache, and NCCLSHIM_LD_CACHE=/dev/null for ncclshim's reading
    of it), the machine's NCCL and libcuda hidden (--audit hide_audit, tests/support/hide_system.c),
    and otherwise exactly the environment a run is given.
    doctor: for --doctor and --explain, which look for Python environments on PATH and under
    HOME and ask the dynamic loader (a child): PATH and HOME lead nowhere, and LD_AUDIT hides
    the machine's NCCL from that child too.
    timeout: the seconds a run may take; a run past it fails the test as a hang."""

    def __init__(self, probe, fake_dir, hide_audit, doctor=False, timeout=None):
        self.probe, self.fake_dir, self.hide_audit = probe, fake_dir, hide_audit
        self.timeout = timeout
        self.env = {"NCCLSHIM_LD_CACHE": "/dev/null"}
        if doctor:
            self.env.update(PATH="/nonexistent", HOME="/nonexistent", LD_AUDIT=hide_audit)

    def fake(self, variant):
        """The fake NCCL of that variant (tests/fakes)."""
        return os.path.join(self.fake_dir, "libfake-nccl-%s.so" % variant)

    def run(self, *args, env=None, cwd=None, program=None, stdout=subprocess.PIPE):
        """The probe's CompletedProcess (stdout, unless given a file, and stderr as bytes).
        program: a path to start it by instead, as a user would, without ld.so in front."""
        if program is not None:
            start = under_valgrind = [program]
        else:
            start = [interpreter(self.probe), "--inhibit-cache", "--audit", self.hide_audit,
                     self.probe]
            # valgrind cannot run an audit module (its libc copy frees what valgrind's malloc
            # allocated): under valgrind only the cache is left out.
            under_valgrind = [interpreter(self.probe), "--inhibit-cache", self.probe]
        try:
            return run_probe_command([*WRAPPER, *start, *args], [*under_valgrind, *args],
                                     env={**self.env, **(env or {})}, cwd=cwd,
                                     stdout=stdout, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("the probe %s hung (more than %.0f s)"
                                 % (" ".join(map(str, args)), self.timeout))

    def text(self, *args, **kwargs):
        """(exit status, stdout, stderr) of run(), strictly UTF-8."""
        proc = self.run(*args, **kwargs)
        return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")

    def json(self, *args, **kwargs):
        """(exit status, the document --json wrote, stderr)."""
        code, out, err = self.text("--json", *args, **kwargs)
        try:
            return code, json.loads(out), err
        except ValueError:
            raise AssertionError("not JSON (exit %d): %r %r" % (code, out, err))


def run_tests(skip=None):
    """A probe test script's main: its unittest cases, or exit 77 (skipped) with the reason
    `skip` gives."""
    if skip:
        print("SKIP: " + skip)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1], verbosity=2)


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

#!/usr/bin/env python3
"""The probe, --doctor and --explain neither hang nor crash on what a hostile
machine holds. Each case was a hang or a crash before the fix:
  - a FIFO named libnccl.so.2 in an LD_LIBRARY_PATH directory (absolute, relative, empty
    entry): the already-loaded step and the loader's own search opened it and blocked;
  - an NCCL whose PT_NOTE has a p_vaddr outside its mapping (glibc loads it): the build-id
    read followed it;
  - an unrelated mapped library whose GNU hash buckets point past the table (glibc, which
    reads the Bloom filter first, loads it): the census followed them.
  - a FIFO the dynamic loader itself opens (a dependency, a glibc-hwcaps or $LIB
    directory, the cached file): ncclshim handed the name or file to it and blocked.
Each run gets exactly the environment given, the machine's NCCL and libcuda hidden.
   test_hostile.py PROBE FAKE_DIR HIDE_AUDIT LOADER_DUMMY"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import elf_patch
from probe_files import (TIMEOUT_MULTIPLIER, VALGRIND, WRAPPER, ProbeRunner, run_tests,
                         sanitized)

PROBE, FAKE_DIR, HIDE_AUDIT, LOADER_DUMMY = map(os.path.abspath, sys.argv[1:5])
# --doctor and --explain among the runs; a hang past 30 s fails the test.
RUNNER = ProbeRunner(PROBE, FAKE_DIR, HIDE_AUDIT, doctor=True, timeout=30 * TIMEOUT_MULTIPLIER)
fake, run_probe = RUNNER.fake, RUNNER.text


class Scratch(unittest.TestCase):
    def setUp(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="ncclshim-hostile-"))
        self.addCleanup(shutil.rmtree, self.root)

    def path(self, *parts):
        full = os.path.join(self.root, *parts)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        return full

    def assert_no_crash(self, code, out, err):
        self.assertIn(code, (0, 1), "exit %d (a signal is negative): %s%s" % (code, out, err))


class Fifo(Scratch):
    def check(self, entry, cwd=None, **env):
        for args in ((), ("--json",), ("--doctor",), ("--explain", "libnccl.so.2: cannot open "
                                                      "shared object file")):
            code, out, err = run_probe(*args, env={"LD_LIBRARY_PATH": entry, **env}, cwd=cwd)
            self.assert_no_crash(code, out, err)

    def test_absolute_entry(self):
        fifo = self.path("fifo", "libnccl.so.2")
        os.mkfifo(fifo)
        self.check(os.path.dirname(fifo))

    def test_relative_and_empty_entries(self):
        fifo = self.path("fifo", "libnccl.so.2")
        os.mkfifo(fifo)
        self.check("fifo", cwd=self.root)
        self.check(":", cwd=os.path.dirname(fifo))

    def test_named_as_the_reason(self):
        fifo = self.path("fifo", "libnccl.so.2")
        os.mkfifo(fifo)
        code, out, _ = run_probe("--json", env={"LD_LIBRARY_PATH": "fifo"}, cwd=self.root)
        self.assertIn("not a regular file", out)


class FifoOnTheLoadersPath(Scratch):
    """A FIFO wherever the dynamic loader itself would open one: a dependency, a glibc-hwcaps
    subdirectory, a $LIB directory, the file the ld.so cache names. Each run must end, and
    name the FIFO."""

    def check_named(self, fifo, **env):
        for args in ((), ("--json",), ("--doctor",)):
            code, out, err = run_probe(*args, env=env)
            self.assert_no_crash(code, out, err)
            if args != ("--doctor",):
                self.assertIn(fifo, out)

    def test_dependency_in_the_same_directory(self):
        lib = self.path("dep", "libnccl.so.2")
        shutil.copy(fake("2.28.9"), lib)
        elf_patch.rename_needed(lib, "libc.so.6", "libq.so.6")
        os.mkfifo(self.path("dep", "libq.so.6"))
        self.check_named(self.path("dep", "libq.so.6"), LD_LIBRARY_PATH=os.path.dirname(lib))

    def test_dependency_through_runpath(self):
        """The dependency found through the file's own RUNPATH ($ORIGIN), no LD_LIBRARY_PATH:
        the file given by path."""
        lib = self.path("runpath", "libnccl.so.2")
        shutil.copy(fake("2.28.9"), lib)
        elf_patch.rename_needed(lib, "libc.so.6", "libq.so.6")
        elf_patch.soname_to_runpath(lib)
        fifo = self.path("runpath", "libq.so.6")
        os.mkfifo(fifo)
        for args in (("--library", lib), ("--json", "--library", lib)):
            code, out, err = run_probe(*args)
            self.assert_no_crash(code, out, err)
            self.assertIn(fifo, out)

    def test_glibc_hwcaps_subdirectory(self):
        fifo = self.path("hw", "glibc-hwcaps", "x86-64-v2", "libnccl.so.2")
        os.mkfifo(fifo)
        self.check_named(fifo, LD_LIBRARY_PATH=self.path("hw"))

    def test_lib_token(self):
        # Where $LIB may lead (ld.so --help names this machine's): a FIFO in each.
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            os.mkfifo(self.path("tok", lib, "libnccl.so.2"))
        for args in ((), ("--json",), ("--doctor",)):
            code, out, err = run_probe(*args, env={"LD_LIBRARY_PATH": self.path("tok") + "/$LIB"})
            self.assert_no_crash(code, out, err)

    def test_cached_file_replaced(self):
        # The real ld.so cache, its NCCL covered by a FIFO in a private mount namespace.
        cached = [line.split(" => ")[1] for line in subprocess.run(
            ["ldconfig", "-p"], stdout=subprocess.PIPE, universal_newlines=True).stdout
            .splitlines() if line.strip().startswith("libnccl.so.2 ") and " => " in line]
        if not cached or os.geteuid() != 0 or not shutil.which("unshare") or WRAPPER or \
                VALGRIND or sanitized(PROBE):
            self.skipTest("needs root, unshare, a native build and an NCCL in the ld.so cache")
        fifo = self.path("cache", "fifo")
        os.mkfifo(fifo)
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        try:
            proc = subprocess.run(
                ["unshare", "-m", "sh", "-c", script, "sh", fifo, cached[0], PROBE, "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                timeout=30 * TIMEOUT_MULTIPLIER, env={"PATH": os.environ.get("PATH", "")})
        except subprocess.TimeoutExpired:
            raise AssertionError("the probe hung on the FIFO at the cached path")
        if "mount" in proc.stderr and proc.returncode != 0 and not proc.stdout:
            self.skipTest("no private mount namespace here: " + proc.stderr.strip())
        self.assert_no_crash(proc.returncode, proc.stdout, proc.stderr)
        self.assertIn(cached[0], proc.stdout)


class MappedObjects(Scratch):
    def test_note_outside_the_mapping(self):
        lib = self.path("note", "libnccl.so.2")
        shutil.copy(fake("2.28.9"), lib)
        elf_patch.bad_note_address(lib)
        if not sanitized(lib) and not WRAPPER:  # the host's ctypes loads no target library
            ctypes.CDLL(lib)  # glibc takes it: only ncclshim's reading could fail
        code, out, err = run_probe("--json", "--library", lib)
        self.assert_no_crash(code, out, err)
        self.assertIn('"fingerprint": "nccl2.28.9-q', out)

    def test_wild_gnu_hash_in_an_unrelated_library(self):
        lib = self.path("hash", "libunrelated.so.1")
        shutil.copy(LOADER_DUMMY, lib)
        elf_patch.wild_gnu_hash(lib)
        if sanitized(lib) or sanitized(fake("2.28.9")):
            self.skipTest("a sanitizer build's library cannot be preloaded into the probe")
        if WRAPPER:
            self.skipTest("the host's ctypes and qemu-user's own loader take no target library")
        ctypes.CDLL(lib)
        code, out, err = run_probe("--json", "--library", fake("2.28.9"), env={"LD_PRELOAD": lib})
        self.assert_no_crash(code, out, err)
        self.assertIn('"version": "2.28.9"', out)


if __name__ == "__main__":
    run_tests(VALGRIND and "these cases need ld.so --audit, which valgrind's run cannot take")

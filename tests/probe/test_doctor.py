#!/usr/bin/env python3
"""ncclshim-probe --explain and --doctor on machines built of fakes: the issue's cases (two
NCCL wheels in one venv, a system NCCL older than the wheel, an unactivated venv), a file
needing a newer glibc, a driver older than a build, NCCL's version mismatch, a missing
libnccl.so.2, text nobody can explain, and hostile input. Each run gets exactly the
environment given: no ld.so cache but the test's own, the machine's NCCL and libcuda hidden.
   test_doctor.py PROBE FAKE_DIR HIDE_AUDIT CUDA_FAKE_DIR MAN_PAGE REFERENCE_MD
With PROBE_VALGRIND set (valgrind and its options), every probe runs under it."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from probe_files import (TIMEOUT_MULTIPLIER, VALGRIND, WRAPPER, ProbeRunner, elf_machine,
                         interpreter, run_tests, sanitized)

PROBE, FAKE_DIR, HIDE_AUDIT, CUDA_FAKE_DIR, MAN_PAGE, REFERENCE, DROPIN = map(os.path.abspath,
                                                                              sys.argv[1:8])
LDCONFIG = next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)),
                None)
RUNNER = ProbeRunner(PROBE, FAKE_DIR, HIDE_AUDIT, doctor=True, timeout=60 * TIMEOUT_MULTIPLIER)
fake, run_probe, run_json = RUNNER.fake, RUNNER.text, RUNNER.json


# The doctor asks the target's dynamic loader by executing it; under a cross build's qemu-user
# (no binfmt_misc) the kernel cannot, and the doctor says it could not ask (UNAVAILABLE).
needs_the_loader = unittest.skipIf(bool(WRAPPER), "the target's dynamic loader cannot be "
                                   "executed under the exe wrapper (no binfmt_misc)")
# A venv's site-packages, and where an NCCL wheel puts its library in it.
SITE_PACKAGES = os.path.join("lib", "python3.12", "site-packages")
WHEEL_LIB = os.path.join(SITE_PACKAGES, "nvidia", "nccl", "lib")


def wheel_file(prefix):
    return os.path.join(prefix, WHEEL_LIB, "libnccl.so.2")


def put_nccl(source, directory):
    """A copy of `source` as directory/libnccl.so.2 (directories made as needed): its path."""
    path = os.path.join(directory, "libnccl.so.2")
    os.makedirs(directory, exist_ok=True)
    shutil.copy(source, path)
    return path


def write_script(path, text):
    """An executable file holding `text` (directories made as needed)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def replace_in_file(test, path, old, new, count=-1, skip=None):
    """Replaces `old` by `new` in the file (every one, or the first `count`). A file without
    `old` skips the test with the reason `skip`, or fails it where none is given."""
    with open(path, "rb") as f:
        data = f.read()
    if old not in data:
        if skip:
            test.skipTest(skip)
        test.fail("%s holds no %r" % (path, old))
    with open(path, "wb") as f:
        f.write(data.replace(old, new, count))


def needs_glibc_9(test, path):
    """Every GLIBC_2.x version the file needs becomes 9.x (the same length): a glibc that is
    nowhere."""
    replace_in_file(test, path, b"GLIBC_2.", b"GLIBC_9.", skip="the fake needs no GLIBC_2.x "
                    "version")


class Machine:
    """A temporary machine: venvs with wheels, a 'system' directory in an ld.so cache."""

    def __init__(self, test):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="ncclshim-doctor-"))
        test.addCleanup(shutil.rmtree, self.root)
        self.cache = None

    def venv(self, name, wheel=None, records=()):
        prefix = os.path.join(self.root, name)
        write_script(os.path.join(prefix, "bin", "python3"), "#!/bin/sh\n")
        if wheel:
            put_nccl(wheel, os.path.join(prefix, WHEEL_LIB))
        for package, version in records:
            record = "%s-%s.dist-info" % (package.replace("-", "_"), version)
            os.makedirs(os.path.join(prefix, SITE_PACKAGES, record))
        return prefix

    def system(self, variant, version):
        """A system package's layout: libnccl.so.2.X.Y and the SONAME link, in the cache."""
        if LDCONFIG is None or elf_machine(LDCONFIG) != elf_machine(PROBE):
            raise unittest.SkipTest("no ldconfig of the probe's architecture to make a cache")
        lib = os.path.join(self.root, "usr-lib")
        os.makedirs(lib, exist_ok=True)
        real = os.path.join(lib, "libnccl.so." + version)
        shutil.copy(fake(variant), real)
        os.symlink(os.path.basename(real), os.path.join(lib, "libnccl.so.2"))
        self.cache = os.path.join(self.root, "ld.so.cache")
        subprocess.run([LDCONFIG, "-C", self.cache, "-f", "/dev/null", "-X", lib], check=True)
        return real

    def env(self, **extra):
        env = {"HOME": self.root}
        if self.cache:
            env["NCCLSHIM_LD_CACHE"] = self.cache
        env.update(extra)
        return env


def explain(text, *args, env):
    """What --explain says of `text`; the probe must explain it (exit status 0)."""
    code, doc, err = run_json("--explain", text, *args, env=env)
    if code != 0:
        raise AssertionError("--explain exit %d on %r: %s" % (code, text, err))
    return doc["explain"]


def copy_of(doc, path):
    found = [c for c in doc["copies"] if c["path"] == path]
    if not found:
        raise AssertionError("%s not among %s" % (path, [c["path"] for c in doc["copies"]]))
    return found[0]


def severities(doc):
    return [(f["severity"], f["finding"]) for f in doc["findings"]]


class OneVenv(unittest.TestCase):
    """The cases' machine: a system NCCL in the cache where SYSTEM gives its (variant,
    version), and a venv (self.venv) with the wheel file WHEEL (self.file) and the packages
    RECORDS, activated (VIRTUAL_ENV in self.env) unless ACTIVE is False."""
    SYSTEM, WHEEL, RECORDS, ACTIVE = None, fake("cuda13.0"), (), True

    def setUp(self):
        m = Machine(self)
        self.system = m.system(*self.SYSTEM) if self.SYSTEM else None
        self.venv = m.venv("venv", self.WHEEL, self.RECORDS)
        self.file = wheel_file(self.venv)
        self.env = m.env(VIRTUAL_ENV=self.venv) if self.ACTIVE else m.env()


class TwoWheelsInOneVenv(OneVenv):
    """nvidia-nccl-cu12 2.29.3 installed after nvidia-nccl-cu13 2.29.7: the file left is
    2.29.3, and torch built for 2.29.7 fails with undefined symbol ncclCommResume."""
    WHEEL = fake("b2.29.3-cuda12.9")
    RECORDS = [("nvidia-nccl-cu13", "2.29.7"), ("nvidia-nccl-cu12", "2.29.3")]

    def test_explain(self):
        x = explain("ImportError: /venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: "
                    "undefined symbol: ncclCommResume", env=self.env)
        self.assertEqual((x["kind"], x["symbol"], x["since"]),
                         ("undefined-symbol", "ncclCommResume", "2.29.7"))
        wheel = copy_of(x, self.file)
        self.assertEqual((wheel["version"], wheel["build"], wheel["has_symbol"]),
                         ("2.29.3", "+cuda12.9", False))
        self.assertEqual(wheel["python_env"], self.venv)
        self.assertIn("two NCCL wheels", x["what_to_do"])
        self.assertIn("nvidia-nccl-cu12 2.29.3", x["what_to_do"])
        self.assertIn("pip uninstall", x["what_to_do"])
        env = [e for e in x["python_envs"] if e["prefix"] == self.venv][0]
        self.assertEqual(env["found_by"], "VIRTUAL_ENV")
        self.assertEqual(sorted(p["name"] for p in env["packages"]),
                         ["nvidia-nccl-cu12", "nvidia-nccl-cu13"])

    def test_doctor(self):
        code, doc, _ = run_json("--doctor", env=self.env)
        self.assertEqual(code, 1)
        errors = [t for s, t in severities(doc["doctor"]) if s == "error"]
        self.assertTrue(any("has 2 NCCL wheels installed" in t and "2.29.3+cuda12.9" in t
                            for t in errors), errors)
        code, out, _ = run_probe("--doctor", env=self.env)
        self.assertEqual(code, 1)
        self.assertRegex(out, r"\n  error +%s has 2 NCCL wheels" % re.escape(self.venv))
        self.assertIn("what to do: pip uninstall -y every nvidia-nccl-cu* package", out)


class SystemOlderThanWheel(OneVenv):
    """CuPy loads the system's 2.18.5 by name, torch its wheel's 2.28.9: whoever comes first
    decides, and torch then misses ncclCommRegister."""
    SYSTEM = ("b2.18.5-cuda12.2", "2.18.5")
    RECORDS = [("nvidia-nccl-cu13", "2.28.9")]

    def test_explain(self):
        x = explain("undefined symbol: ncclCommRegister", env=self.env)
        self.assertEqual((x["since"], x["plain_process"]), ("2.19.1", self.system))
        self.assertFalse(copy_of(x, self.system)["has_symbol"])
        self.assertTrue(copy_of(x, self.file)["has_symbol"])
        self.assertEqual(copy_of(x, self.system)["found_via"], "ld-cache")
        self.assertIn("gets %s (2.18.5+cuda12.2, ld-cache), which lacks it" % self.system,
                      x["what_to_do"])
        self.assertIn("put %s first on LD_LIBRARY_PATH" % os.path.dirname(self.file),
                      x["what_to_do"])
        code, out, _ = run_probe("--explain", "undefined symbol: ncclCommRegister", env=self.env)
        self.assertIn("    lacks  2.18.5+cuda12.2      %s" % self.system, out)
        self.assertIn("  a plain process loads:  %s (2.18.5+cuda12.2): lacks it" % self.system,
                      out)

    def test_doctor(self):
        code, doc, _ = run_json("--doctor", env=self.env)
        d = doc["doctor"]
        self.assertEqual(code, 1)
        self.assertEqual(d["plain_process"], self.system)
        env = [e for e in d["python_envs"] if e["prefix"] == self.venv][0]
        self.assertEqual(env["loads"], self.file)
        fights = [t for s, t in severities(d) if s == "warning" and "will fight" in t]
        self.assertEqual(len(fights), 1, severities(d))
        self.assertIn(self.file, fights[0])
        self.assertIn(self.system, fights[0])
        self.assertEqual(copy_of(d, self.system)["version_source"], "banner")

    def test_versions_without_banner(self):
        """A file without NCCL's banner: the version from its name, else at least the newest
        function it exports."""
        m = Machine(self)
        system = m.system("2.21.5", "2.21.5")
        venv = m.venv("v", fake("2.27.3"))
        _, doc, _ = run_json("--doctor", env=m.env(VIRTUAL_ENV=venv))
        self.assertEqual(copy_of(doc["doctor"], system)["version_source"], "file-name")
        self.assertEqual(copy_of(doc["doctor"], system)["version"], "2.21.5")
        wheel = copy_of(doc["doctor"], wheel_file(venv))
        self.assertEqual((wheel["version_source"], wheel["version"]), ("functions", "2.27.3"))


class UnactivatedVenv(OneVenv):
    """A venv's program started by its path without VIRTUAL_ENV (services, IDEs): its bin/
    entry is a symlink to a program elsewhere, so /proc/self/exe misses the venv. (The venv
    has no pyvenv.cfg unless a test writes one.)"""
    SYSTEM = ("b2.28.3-cuda12.9", "2.28.3")
    WHEEL = fake("b2.29.7-cuda13.0")
    RECORDS = [("nvidia-nccl-cu13", "2.29.7")]
    ACTIVE = False

    def setUp(self):
        super().setUp()
        self.program = os.path.join(self.venv, "bin", "ncclshim-probe")
        os.symlink(PROBE, self.program)

    def test_doctor_sees_the_venv_given(self):
        code, doc, _ = run_json("--doctor", "--python", self.venv, env=self.env)
        d = doc["doctor"]
        env = [e for e in d["python_envs"] if e["prefix"] == self.venv][0]
        self.assertEqual((env["found_by"], env["loads"]), ("--python", self.file))
        self.assertEqual(d["plain_process"], self.system)
        self.assertTrue(any("will fight" in t for _, t in severities(d)))

    def test_python_prefix_that_is_no_directory_refused(self):
        """A --python prefix that names no directory (a typo, an empty value, a file) is a
        usage error naming it, never skipped without a word."""
        missing = self.venv + "-typo"
        for prefix, said in ((missing, "--python '%s': no such directory" % missing),
                             ("", "--python needs a prefix, not an empty one"),
                             (self.program, "--python '%s': no such directory" % self.program)):
            for mode in (["--doctor"], ["--explain", "undefined symbol: ncclCommSuspend"]):
                code, out, err = run_probe(*mode, "--python", prefix, env=self.env)
                self.assertEqual((code, out), (2, ""), (mode, prefix))
                self.assertIn(said, err, (mode, prefix))
            code, doc, _ = run_json("--doctor", "--python", prefix, env=self.env)
            self.assertEqual((code, doc["error"]["message"]), (2, said), prefix)

    def test_explain_names_the_venv_wheel(self):
        x = explain("undefined symbol: ncclCommSuspend", "--python", self.venv, env=self.env)
        self.assertTrue(copy_of(x, self.file)["has_symbol"])
        self.assertFalse(copy_of(x, self.system)["has_symbol"])
        self.assertIn("LD_LIBRARY_PATH", x["what_to_do"])

    def test_stale_virtual_env(self):
        """VIRTUAL_ENV naming another venv than the one the program runs from is
        stale: the program's own venv comes first."""
        if WRAPPER or VALGRIND:
            self.skipTest("needs the program started by its own path")
        with open(os.path.join(self.venv, "pyvenv.cfg"), "w") as f:
            f.write("home = /usr/bin\n")
        other = Machine(self).venv("other", fake("2.28.9"))
        env = dict(self.env, VIRTUAL_ENV=other)
        _, doc, _ = run_json("--doctor", env=env, program=self.program)
        self.assertEqual(doc["doctor"]["ncclshim"], self.file)

    def test_search_takes_the_venv_wheel(self):
        if WRAPPER or VALGRIND:
            self.skipTest("needs the program started by its own path")
        with open(os.path.join(self.venv, "pyvenv.cfg"), "w") as f:
            f.write("home = /usr/bin\n")
        _, doc, _ = run_json("--doctor", env=self.env, program=self.program)
        self.assertEqual(doc["doctor"]["ncclshim"], self.file)

    def test_symlink_in_a_prefix_that_is_no_venv(self):
        """Without pyvenv.cfg, Python follows its program's symlink and imports from the
        prefix the link leads to: the prefix the link sits in says nothing of it."""
        if WRAPPER or VALGRIND:
            self.skipTest("needs the program started by its own path")
        _, doc, _ = run_json("--doctor", env=self.env, program=self.program)
        self.assertNotEqual(doc["doctor"]["ncclshim"], self.file)
        self.assertEqual(doc["doctor"]["ncclshim"], self.system)


class Glibc(unittest.TestCase):
    def setUp(self):
        m = Machine(self)
        self.venv = m.venv("venv", fake("cuda13.0"))
        self.newer = m.venv("newer", fake("b2.29.7-cuda13.0"))
        self.file = wheel_file(self.newer)
        needs_glibc_9(self, self.file)
        self.env = m.env(PATH=os.path.join(self.venv, "bin") + ":" +
                         os.path.join(self.newer, "bin"))

    def test_doctor(self):
        code, doc, _ = run_json("--doctor", env=self.env)
        self.assertEqual(code, 1)
        copy = copy_of(doc["doctor"], self.file)
        self.assertTrue(copy["glibc_need"].startswith("GLIBC_9."), copy)
        errors = [t for s, t in severities(doc["doctor"]) if s == "error"]
        self.assertTrue(any(self.file in t and "it cannot load here" in t for t in errors), errors)
        envs = {e["prefix"]: e["found_by"] for e in doc["doctor"]["python_envs"]}
        self.assertEqual(envs.get(self.venv), "python3 on PATH")

    def test_explain(self):
        text = ("ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_9.2' not found "
                "(required by %s)" % self.file)
        x = explain(text, env=self.env)
        self.assertEqual((x["kind"], x["glibc"]), ("glibc", "GLIBC_9.2"))
        self.assertIn("%s needs glibc 9.2 or newer" % self.file, x["meaning"])
        self.assertIn("cannot load here", x["meaning"])
        self.assertIn(wheel_file(self.venv), x["what_to_do"])


class Driver(unittest.TestCase):
    def test_build_newer_than_driver(self):
        m = Machine(self)
        venv = m.venv("venv", fake("cuda13.0"))
        env = m.env(VIRTUAL_ENV=venv,
                    NCCLSHIM_CUDA_LIBRARY=os.path.join(CUDA_FAKE_DIR, "libfake-cuda-12.2.so"))
        code, doc, _ = run_json("--doctor", env=env)
        self.assertEqual((code, doc["doctor"]["driver_cuda"]), (1, "12.2"))
        errors = [t for s, t in severities(doc["doctor"]) if s == "error"]
        self.assertTrue(any("built for CUDA 13.0; the driver supports CUDA 12.2" in t
                            for t in errors), errors)

    @needs_the_loader
    def test_nothing_wrong(self):
        m = Machine(self)
        venv = m.venv("venv", fake("cuda12.9"), [("nvidia-nccl-cu12", "2.28.9")])
        env = m.env(VIRTUAL_ENV=venv,
                    NCCLSHIM_CUDA_LIBRARY=os.path.join(CUDA_FAKE_DIR, "libfake-cuda-13.0.so"))
        code, doc, _ = run_json("--doctor", env=env)
        self.assertEqual((code, doc["doctor"]["problems"]), (0, 0), severities(doc["doctor"]))
        code, out, _ = run_probe("--doctor", env=env)
        self.assertEqual(code, 0)
        self.assertIn("  ok      nothing wrong", out)


class OtherTexts(OneVenv):

    def test_version_mismatch(self):
        text = ("node1:123:456 [1] NCCL WARN Mismatched NCCL version detected : rank 0 version "
                "22809 rank 1 version 22803")
        x = self.explain(text)
        self.assertEqual(x["kind"], "version-mismatch")
        self.assertIn("rank 0 runs NCCL 2.28.9 and rank 1 runs NCCL 2.28.3", x["meaning"])
        self.assertIn("same file", x["what_to_do"])

    @needs_the_loader
    def test_not_found(self):
        x = self.explain("OSError: libnccl.so.2: cannot open shared object file: No such file or "
                         "directory")
        self.assertEqual(x["kind"], "not-found")
        self.assertIn("LD_LIBRARY_PATH='%s'" % os.path.join(self.venv, WHEEL_LIB), x["what_to_do"])

    def test_cannot_tell(self):
        code, doc, _ = run_json("--explain", "Segmentation fault (core dumped)", env=self.env)
        x = doc["explain"]
        self.assertEqual((code, x["kind"], x["explained"]), (1, "unknown", False))
        self.assertTrue(x["meaning"].startswith("cannot tell"))
        self.assertEqual([c["path"] for c in x["copies"]], [wheel_file(self.venv)])
        code, out, _ = run_probe("--explain", "Segmentation fault", env=self.env)
        self.assertEqual(code, 1)
        self.assertIn(wheel_file(self.venv), out)

    def test_symbol_not_in_the_list(self):
        x = self.explain("undefined symbol: ncclNoSuchThing")
        self.assertEqual((x["kind"], x["symbol"], x["since"]),
                         ("internal-symbol", "ncclNoSuchThing", None))
        self.assertIn("no function of NCCL's API", x["meaning"])
        self.assertNotIn("install", x["what_to_do"])

    def explain(self, text, env=None):
        return explain(text, env=env or self.env)

    # Each kind of error, from the texts users paste (as collected in field-problems.md).
    def test_cxx_runtime_is_not_an_nccl_problem(self):
        x = self.explain("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version "
                         "`GLIBCXX_3.4.32' not found (required by /opt/venv/lib/python3.12/"
                         "site-packages/nvidia/nccl/lib/libnccl.so.2)")
        self.assertEqual((x["kind"], x["glibc"]), ("cxx-runtime", "GLIBCXX_3.4.32"))
        self.assertNotIn("LD_LIBRARY_PATH=", x["what_to_do"])
        self.assertIn("libstdc++", x["what_to_do"])

    def test_glibc_private(self):
        x = self.explain("/usr/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_PRIVATE' not found "
                         "(required by /opt/conda/lib/libpthread.so.0)")
        self.assertEqual(x["kind"], "glibc-private")
        self.assertIn("/opt/conda/lib/libpthread.so.0", x["meaning"])
        self.assertNotIn("export LD_LIBRARY_PATH=", x["what_to_do"])

    def test_cuda_error_is_no_missing_function(self):
        for text in ("misc/utils.cc:70 NCCL WARN Cuda failure 'named symbol not found' in "
                     "ncclCommInitRank", "NCCL WARN unhandled cuda error (run with "
                     "NCCL_DEBUG=INFO for details) named symbol not found"):
            x = self.explain(text)
            self.assertEqual((x["kind"], x["symbol"]), ("cuda", None), text)
            self.assertIn("CUDA", x["meaning"])

    def test_internal_symbol(self):
        x = self.explain("libnccl-net.so: undefined symbol: ncclIbRegMr")
        self.assertEqual((x["kind"], x["symbol"]), ("internal-symbol", "ncclIbRegMr"))
        self.assertNotIn("install an NCCL", x["what_to_do"])

    def test_required_function_is_in_every_release(self):
        x = self.explain("undefined symbol: ncclAllReduce")
        self.assertEqual((x["kind"], x["symbol"]), ("undefined-symbol", "ncclAllReduce"))
        self.assertIn("every NCCL 2.x release", x["meaning"])
        self.assertNotIn("older release", x["meaning"])

    def test_hostile_text(self):
        text = 'undefined symbol: ncclCommResume\n\x1b[2J"\\\xff'
        code, out, _ = run_probe("--explain", text, env=self.env)
        self.assertEqual(code, 0)
        self.assertNotIn("\x1b", out)
        _, doc, _ = run_json("--explain", text, env=self.env)
        self.assertEqual(doc["explain"]["input"], text)

    def broken_wheel(self):
        """A machine with a venv whose wheel file is truncated: (machine, venv, file)."""
        m = Machine(self)
        venv = m.venv("venv")
        path = wheel_file(venv)
        os.makedirs(os.path.dirname(path))
        with open(fake("2.28.9"), "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:200])  # truncated
        return m, venv, path

    def test_broken_wheel_file(self):
        m, venv, path = self.broken_wheel()
        code, doc, _ = run_json("--doctor", env=m.env(VIRTUAL_ENV=venv))
        self.assertEqual(code, 1)
        self.assertFalse(copy_of(doc["doctor"], path)["usable"])
        self.assertTrue(any(s == "error" and "cannot serve as NCCL" in t
                            for s, t in severities(doc["doctor"])))

    def test_broken_wheel_file_gets_no_export(self):
        """A truncated wheel file beside a usable NCCL a plain process maps: the file is to be
        replaced, never put first on LD_LIBRARY_PATH."""
        m, venv, path = self.broken_wheel()
        other = put_nccl(fake("2.28.9"), os.path.join(m.root, "other"))
        _, doc, _ = run_json("--doctor", env=m.env(VIRTUAL_ENV=venv,
                                                   LD_LIBRARY_PATH=os.path.dirname(other)))
        advice = [f["what_to_do"] for f in doc["doctor"]["findings"]
                  if os.path.dirname(path) in f["what_to_do"] and "export" in f["what_to_do"]]
        self.assertFalse(advice, severities(doc["doctor"]))

    def test_export_quoted_for_the_shell(self):
        """The export line of a path holding ' runs as written in a POSIX shell, as printed in
        the text report."""
        m = Machine(self)
        venv = m.venv("it's venv", fake("2.28.9"))
        code, out, _ = run_probe("--explain", "libnccl.so.2: cannot open shared object file",
                                 env=m.env(VIRTUAL_ENV=venv))
        line = re.search(r"export (LD_LIBRARY_PATH=.*?\}\")", out)
        self.assertTrue(line, out)
        proc = subprocess.run(["sh", "-c", "export %s; printf %%s \"$LD_LIBRARY_PATH\""
                               % line.group(1)], capture_output=True, universal_newlines=True,
                              env={})
        self.assertEqual((proc.returncode, proc.stdout),
                         (0, os.path.dirname(wheel_file(venv))), proc.stderr)

    def test_user_site_and_dist_packages(self):
        """pip --user's site and Debian's dist-packages are environments too."""
        m = Machine(self)
        user = os.path.join(m.root, ".local", "lib", "python3.11", "site-packages")
        deb = os.path.join(m.root, "deb", "lib", "python3", "dist-packages")
        user_file, deb_file = (put_nccl(fake(variant), os.path.join(site, "nvidia", "nccl", "lib"))
                               for site, variant in ((user, "2.28.9"), (deb, "2.27.3")))
        _, doc, _ = run_json("--doctor", "--python", os.path.join(m.root, "deb"), env=m.env())
        envs = {e["prefix"]: (e["found_by"], e["loads"]) for e in doc["doctor"]["python_envs"]}
        self.assertEqual(envs[os.path.join(m.root, ".local")], ("user site", user_file))
        self.assertEqual(envs[os.path.join(m.root, "deb")], ("--python", deb_file))

    def test_pythonuserbase_and_one_order(self):
        """The user site honours PYTHONUSERBASE, and a conda environment's wheel
        comes before its lib/ for the doctor as for ncclshim's search (pip torch in conda)."""
        m = Machine(self)
        base = os.path.join(m.root, "userbase")
        user_file = put_nccl(fake("2.28.9"), os.path.join(base, WHEEL_LIB))
        _, doc, _ = run_json("--doctor", env=m.env(PYTHONUSERBASE=base))
        envs = {e["prefix"]: e for e in doc["doctor"]["python_envs"]}
        self.assertEqual(envs[base]["loads"], user_file)
        conda = m.venv("conda", fake("2.28.9"))
        os.makedirs(os.path.join(conda, "conda-meta"))
        conda_file = put_nccl(fake("2.27.3"), os.path.join(conda, "lib"))
        _, doc, _ = run_json("--doctor", env=m.env(CONDA_PREFIX=conda))
        d = doc["doctor"]
        envs = {e["prefix"]: e for e in d["python_envs"]}
        self.assertEqual(envs[conda]["loads"], wheel_file(conda))
        self.assertEqual(d["ncclshim"], wheel_file(conda))
        # conda's own lib/ is no wheel file: reported apart, no "two wheel files" warning
        self.assertEqual(envs[conda]["wheel_files"], [wheel_file(conda)])
        self.assertEqual(envs[conda]["conda_lib"], conda_file)
        self.assertFalse([f for f in d["findings"] if "wheel files" in f["finding"]],
                         severities(d))

    def test_pyenv_shim_is_resolved(self):
        m = Machine(self)
        root = os.path.join(m.root, ".pyenv")
        real = m.venv(os.path.join(".pyenv", "versions", "3.12.4"), fake("2.28.9"))
        write_script(os.path.join(root, "shims", "python3"),
                     "#!/bin/sh\nexec pyenv exec python3 \"$@\"\n")
        with open(os.path.join(root, "version"), "w") as f:
            f.write("3.12.4\n")
        _, doc, _ = run_json("--doctor", env=m.env(PATH=os.path.join(root, "shims")))
        envs = {e["prefix"]: e for e in doc["doctor"]["python_envs"]}
        self.assertIn(real, envs)
        self.assertNotIn(root, envs)

    def test_corrupt_files_never_crash(self):
        """Bytes changed at random in the ELF header, the program and section headers and
        the dynamic tables: always a report (exit 0 or 1), never a signal."""
        import random
        rng = random.Random(24)
        with open(fake("cuda13.0"), "rb") as f:
            good = f.read()
        shoff = int.from_bytes(good[0x28:0x30], "little") if good[4] == 2 else len(good) - 2048
        m = Machine(self)
        venv = m.venv("venv", fake("cuda13.0"))
        path = wheel_file(venv)
        runs = 10 if VALGRIND else 40
        for i in range(runs):
            data = bytearray(good)
            for _ in range(rng.randint(1, 16)):
                at = rng.choice([rng.randrange(0, 4096), rng.randrange(min(shoff, len(data) - 1),
                                                                       len(data))])
                data[at] = rng.randrange(256)
            with open(path, "wb") as f:
                f.write(data)
            code, out, err = run_probe("--doctor", env=m.env(VIRTUAL_ENV=venv))
            self.assertIn(code, (0, 1), "run %d: exit %d %s" % (i, code, err))
            self.assertIn("findings:", out, "run %d: %s" % (i, err[-3000:]))

    def test_conda_environment(self):
        """A conda environment's lib/libnccl.so.2 is what its Python loads."""
        m = Machine(self)
        conda = os.path.join(m.root, "conda")
        os.makedirs(os.path.join(conda, "conda-meta"))
        file = put_nccl(fake("2.27.3"), os.path.join(conda, "lib"))
        _, doc, _ = run_json("--doctor", env=m.env(CONDA_PREFIX=conda))
        env = [e for e in doc["doctor"]["python_envs"] if e["prefix"] == conda]
        self.assertEqual([(e["found_by"], e["loads"]) for e in env], [("CONDA_PREFIX", file)])
        self.assertEqual(copy_of(doc["doctor"], file)["found_via"], "active-environment")

    @needs_the_loader
    def test_conda_lib_is_not_a_wheel(self):
        """The conda environment's lib/ copy against another one a plain process maps: the
        warning names lib/, not a wheel."""
        m = Machine(self)
        conda = os.path.join(m.root, "conda")
        os.makedirs(os.path.join(conda, "conda-meta"))
        file = put_nccl(fake("2.27.3"), os.path.join(conda, "lib"))
        other = put_nccl(fake("2.28.9"), os.path.join(m.root, "other"))
        _, doc, _ = run_json("--doctor", env=m.env(CONDA_PREFIX=conda,
                                                   LD_LIBRARY_PATH=os.path.dirname(other)))
        fight = [t for s, t in severities(doc["doctor"]) if "two NCCLs will fight" in t]
        self.assertEqual(len(fight), 1, severities(doc["doctor"]))
        self.assertIn("loads %s (" % file, fight[0])
        self.assertIn("from the conda environment's lib/", fight[0])
        self.assertNotIn("wheel", fight[0])

    def test_plugin_info_line(self):
        """NCCL's routine INFO line for a net plugin it did not find is no missing NCCL."""
        x = self.explain("node1:1:1 [0] NCCL INFO NET/Plugin: Plugin load (libnccl-net.so) "
                         "returned 2 : libnccl-net.so: cannot open shared object file: No such "
                         "file or directory")
        self.assertEqual(x["kind"], "plugin-absent")
        self.assertIn("routine", x["meaning"])
        self.assertNotIn("libnccl.so.2", x["meaning"])

    def test_banner_newer_than_the_functions(self):
        """A banner naming a later release than the file's functions: the file lacks what
        that release has, and the doctor says the banner is false."""
        m = Machine(self)
        lib = put_nccl(fake("b2.28.3-cuda12.9"), os.path.join(m.root, "lib"))
        replace_in_file(self, lib, b"NCCL version 2.28.3+", b"NCCL version 2.29.7+")
        code, doc, _ = run_json("--doctor", env=m.env(LD_LIBRARY_PATH=os.path.dirname(lib)))
        false = [t for s, t in severities(doc["doctor"])
                 if s == "warning" and "banner is false" in t]
        self.assertEqual(len(false), 1, severities(doc["doctor"]))
        self.assertIn("says NCCL 2.29.7, but it lacks", false[0])
        self.assertEqual(code, 1)

    def test_usage(self):
        for args in (["--explain"], ["--python"]):
            code, _, err = run_probe(*args)
            self.assertEqual(code, 2, args)
            self.assertIn("needs a value", err)
        for args, why in ((["--doctor", "--explain", "x"], "not both"),
                          (["--python", "/usr"], "--python goes with"),
                          (["--doctor", "--library", "/x"], "goes with the report")):
            code, out, err = run_probe(*args)
            self.assertEqual((code, out), (2, ""), args)
            self.assertIn(why, err)


@needs_the_loader
class AskTheLoader(unittest.TestCase):
    """What "a plain process loads" means is what the dynamic loader maps, in the cases a model
    of it got wrong: relative, empty and $LIB entries of LD_LIBRARY_PATH, LD_PRELOAD, files the
    loader fails on (named, an error), files the search refuses but the loader takes; and what
    --explain and --doctor make of it: an NCCL only on LD_LIBRARY_PATH, only a broken wheel,
    only NCCL_HOME."""

    def setUp(self):
        self.m = Machine(self)
        self.lib = os.path.join(self.m.root, "lib")
        os.makedirs(self.lib)

    def doctor(self, cwd=None, **env):
        code, doc, _ = run_json("--doctor", env=env, cwd=cwd)
        return code, doc["doctor"]

    def test_not_found_while_a_plain_process_loads_one(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        x = explain("OSError: libnccl.so.2: cannot open shared object file: No such file or "
                    "directory", env=self.m.env(LD_LIBRARY_PATH=self.lib))
        self.assertEqual(x["kind"], "not-found")
        self.assertIn("here a plain process maps %s" % lib, x["meaning"])
        self.assertNotIn("off the loader's path", x["what_to_do"])

    def test_not_found_with_only_a_broken_wheel(self):
        venv = self.m.venv("venv", fake("2.28.9"))
        with open(wheel_file(venv), "r+b") as f:
            f.truncate(4096)
        x = explain("libnccl.so.2: cannot open shared object file",
                    env=self.m.env(VIRTUAL_ENV=venv))
        self.assertNotIn("LD_LIBRARY_PATH=", x["what_to_do"])
        self.assertIn("reinstall", x["what_to_do"])

    def test_nccl_home_only_is_a_warning(self):
        home = os.path.join(self.m.root, "nccl")
        put_nccl(fake("2.28.9"), os.path.join(home, "lib"))
        code, d = self.doctor(**self.m.env(NCCL_HOME=home))
        self.assertEqual(code, 1)
        self.assertTrue(any(f["severity"] == "warning" and "only ncclshim" in f["finding"]
                            for f in d["findings"]), severities(d))

    def test_relative_entry(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        code, d = self.doctor(cwd=self.m.root, LD_LIBRARY_PATH="lib")
        self.assertEqual(d["plain_process"], lib)
        self.assertEqual(d["plain_process_source"], "loader")

    def test_empty_entry(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        code, d = self.doctor(cwd=self.lib, LD_LIBRARY_PATH=":/nonexistent")
        self.assertEqual(d["plain_process"], lib)

    def test_lib_token(self):
        # $LIB is the loader's: lib, lib64 or Debian's lib/<multiarch>. Every one holds a copy.
        places = [os.path.join(self.m.root, sub) for sub in
                  ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu")]
        for place in places:
            put_nccl(fake("2.28.9"), place)
        code, d = self.doctor(LD_LIBRARY_PATH=os.path.join(self.m.root, "$LIB"))
        self.assertIn(d["plain_process"], [os.path.join(p, "libnccl.so.2") for p in places])

    def test_preload(self):
        if sanitized(fake("2.28.9")):
            self.skipTest("a sanitizer build's fake cannot be preloaded into the probe")
        preloaded = os.path.join(self.m.root, "pre", "libnccl.so.2.28.9")
        os.makedirs(os.path.dirname(preloaded))
        shutil.copy(fake("2.28.9"), preloaded)
        put_nccl(fake("2.27.3"), self.lib)
        code, d = self.doctor(LD_PRELOAD=preloaded, LD_LIBRARY_PATH=self.lib)
        self.assertEqual(d["plain_process"], preloaded)
        self.assertEqual(d["plain_process_source"], "loader (LD_PRELOAD)")

    def assert_loader_fails_on(self, lib, d, words):
        self.assertIsNone(d["plain_process"])
        errors = [f for f in d["findings"] if f["severity"] == "error"
                  and f["finding"].startswith("a plain process fails to load libnccl.so.2")]
        self.assertTrue(errors, severities(d))
        self.assertIn(words, errors[0]["finding"])
        self.assertIn(lib, errors[0]["what_to_do"])

    def test_truncated_file_is_a_sigbus_named(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        with open(lib, "r+b") as f:  # the dynamic section is gone: mapping it faults
            f.truncate(4096)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assertEqual(code, 1)
        self.assert_loader_fails_on(lib, d, "signal")

    def test_text_linker_script_and_directory(self):
        for content, words in ((b"hello\n", "file too short"),
                               (b"/* GNU ld script */\nINPUT(-lfoo)\n" + b" " * 1024,
                                "invalid ELF header")):
            lib = os.path.join(self.lib, "libnccl.so.2")
            with open(lib, "wb") as f:
                f.write(content)
            code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
            self.assert_loader_fails_on(lib, d, words)
        os.unlink(lib)
        os.mkdir(lib)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assert_loader_fails_on(lib, d, "cannot read file data")

    def test_big_endian(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        with open(lib, "r+b") as f:
            f.seek(5)
            f.write(b"\x02")
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assertIsNone(d["plain_process"])
        self.assertTrue(any(f["severity"] == "error" for f in d["findings"]), severities(d))

    @needs_the_loader
    def test_glibc_hwcaps_copy(self):
        """A copy in a glibc-hwcaps subdirectory this CPU reaches is what the loader maps, and
        so what ncclshim's search takes."""
        said = subprocess.run([interpreter(PROBE), "--help"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
        # Every level the loader knows, in its order, and whether it searches it here.
        levels = re.findall(r"^  (\S+)(.*)$", said.split("Subdirectories of glibc-hwcaps")[-1]
                            .split("Legacy")[0], re.M)
        searched = [name for name, note in levels if "searched" in note]
        if not searched:
            self.skipTest("this CPU and loader search no glibc-hwcaps subdirectory")
        put_nccl(fake("2.27.3"), self.lib)
        # A copy in each level, the ones the loader skips here too: it takes the first one
        # it searches, and so must ncclshim.
        copies = {name: put_nccl(fake(v), os.path.join(self.lib, "glibc-hwcaps", name))
                  for (name, _), v in zip(levels, ("2.28.9", "2.29.7", "2.28.3", "2.21.5"))}
        hw = copies[searched[0]]
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assertEqual((d["plain_process"], d["ncclshim"]), (hw, hw))
        self.assertFalse([f for f in d["findings"] if f["severity"] != "info"], severities(d))

    def test_devices_are_what_the_loader_says(self):
        """/dev/zero and /dev/null answer at once: the loader reads them and says why it
        stops, which is what the doctor says (not that opening them blocks)."""
        for device, words in (("/dev/zero", "invalid ELF header"),
                              ("/dev/null", "file too short")):
            lib = os.path.join(self.lib, "libnccl.so.2")
            if os.path.lexists(lib):
                os.unlink(lib)
            os.symlink(device, lib)
            code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
            self.assert_loader_fails_on(lib, d, words)

    def test_fifo(self):
        os.mkfifo(os.path.join(self.lib, "libnccl.so.2"))
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assert_loader_fails_on(os.path.join(self.lib, "libnccl.so.2"), d, "FIFO")

    def test_version_need_the_host_lacks(self):
        lib = put_nccl(fake("b2.29.7-cuda13.0"), self.lib)
        needs_glibc_9(self, lib)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assert_loader_fails_on(lib, d, "not found (required by %s)" % lib)

    def test_no_section_headers(self):
        """Both loaders take a library stripped of its section headers: the doctor reads it
        through its dynamic section, as usable as the original."""
        lib = put_nccl(fake("2.28.9"), self.lib)
        with open(lib, "r+b") as f:
            data = bytearray(f.read())
            data[0x28:0x30] = bytes(8)  # e_shoff
            data[0x3c:0x40] = bytes(4)  # e_shnum, e_shstrndx
            f.seek(0)
            f.write(data)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        copy = copy_of(d, lib)
        self.assertTrue(copy["usable"], copy)
        self.assertTrue(copy["glibc_need"], copy)
        self.assertEqual(d["plain_process"], lib)
        self.assertEqual(d["ncclshim"], lib)
        self.assertFalse([f for f in d["findings"] if f["severity"] != "info"], severities(d))

    def test_missing_dependency(self):
        lib = put_nccl(fake("2.28.9"), self.lib)
        # its need of libc.so.6 becomes one nobody has
        replace_in_file(self, lib, b"libc.so.6\0", b"libq.so.6\0", 1,
                        skip="the fake needs no libc.so.6")
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assert_loader_fails_on(lib, d, "libq.so.6, which %s needs" % lib)

    def test_dropin_copied_as_nccl(self):
        """ncclshim's own drop-in under NCCL's name defines every NCCL function, yet the search
        skips it (its marker): the doctor does not count it as a usable NCCL either."""
        lib = put_nccl(DROPIN, self.lib)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        copy = copy_of(d, lib)
        self.assertFalse(copy["usable"], copy)
        self.assertIn("ncclshim's drop-in", copy["unusable_reason"])
        self.assertNotEqual(d["ncclshim"], lib)

    def test_false_banner(self):
        """A banner naming an older release than the functions the file defines:
        the functions win, and the doctor says the banner is false."""
        lib = put_nccl(fake("b2.29.7-cuda13.0"), self.lib)
        replace_in_file(self, lib, b"NCCL version 2.29.7+", b"NCCL version 2.18.5+")
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        copy = copy_of(d, lib)
        self.assertEqual((copy["version"], copy["version_source"]), ("2.29.7", "functions"))
        false = [t for s, t in severities(d) if s == "warning" and "banner is false" in t]
        self.assertEqual(len(false), 1, severities(d))
        self.assertIn("says NCCL 2.18.5", false[0])

    def test_file_the_search_refuses(self):
        lib = put_nccl(fake("missing-required"), self.lib)
        code, d = self.doctor(LD_LIBRARY_PATH=self.lib)
        self.assertEqual(d["plain_process"], lib)
        self.assertTrue(any("ncclshim's search refuses" in f["finding"] for f in d["findings"]),
                        severities(d))


def in_mount_namespace(argv, env, bind):
    """Runs argv in a new user and mount namespace (unshare -rm) where each (source, target)
    of `bind` is bind-mounted first: how a test puts its own /etc/ld.so.cache in front of the
    machine's. None where namespaces are not allowed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    mounts = " && ".join("mount --bind '%s' '%s'" % pair for pair in bind)
    script = mounts + ' && exec "$@"'
    proc = subprocess.run([unshare, "-rm", "sh", "-c", script, "sh", *argv], env=env,
                          capture_output=True, timeout=60)
    if proc.returncode != 0 and b"Operation not permitted" in proc.stderr:
        return None
    return proc


class RealCacheInANamespace(unittest.TestCase):
    """With the machine's own /etc/ld.so.cache replaced (a mount namespace), the
    doctor's plain process is what the loader maps through that cache, no model of it."""

    def doctor_in_namespace(self, stale):
        """The doctor's JSON with a cache of its own that registers a system NCCL (whose
        files are gone when `stale`), and the path the cache registers."""
        if LDCONFIG is None or elf_machine(LDCONFIG) != elf_machine(PROBE):
            self.skipTest("no ldconfig of the probe's architecture to make a cache")
        if VALGRIND or WRAPPER:
            self.skipTest("runs the probe directly, in a namespace")
        defaults = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                    "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                    "/usr/lib/aarch64-linux-gnu")
        if any(os.path.exists(os.path.join(d, "libnccl.so.2")) for d in defaults):
            self.skipTest("an NCCL in the loader's default directories joins the test's cache")
        m = Machine(self)
        real = m.system("2.28.9", "2.28.9")
        if stale:  # removed after the cache was made: the cache names files that are gone
            os.unlink(os.path.join(os.path.dirname(real), "libnccl.so.2"))
            os.unlink(real)
        cmd = [PROBE, "--doctor", "--json"]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
        proc = in_mount_namespace(cmd, env, [(m.cache, "/etc/ld.so.cache")])
        if proc is None:
            self.skipTest("mount namespaces are not allowed here")
        return json.loads(proc.stdout)["doctor"], real

    def test_the_cache_the_loader_reads(self):
        d, real = self.doctor_in_namespace(stale=False)
        if d["plain_process"] not in (real, os.path.join(os.path.dirname(real), "libnccl.so.2")):
            # a default directory of the loader's holds an NCCL of the machine's: it is found
            # first only when the cache misses, which it does not here
            self.fail("plain process %r, the cache registers %r" % (d["plain_process"], real))
        self.assertEqual(d["plain_process_source"], "loader")

    def test_a_stale_cache(self):
        """A cache entry whose file is gone: the loader finds nothing, and so does the doctor
        (a model of the cache would name the registered path)."""
        d, real = self.doctor_in_namespace(stale=True)
        self.assertFalse(d["plain_process"], "the doctor names %r, gone since the cache was "
                                             "made (%r)" % (d["plain_process"], real))
        self.assertEqual(d["plain_process_source"], "loader")


class TheDoctorsOwnLimits(unittest.TestCase):
    """Where the doctor cannot run the dynamic loader as a plain process would (a setuid probe,
    whose child was in secure mode; /proc hidden, where its stub's /proc/self/fd path is
    gone), that is the doctor's limit, never "a plain process fails to load libnccl.so.2":
    it asks the loader another way, or says it could not ask."""

    def setUp(self):
        if os.geteuid() != 0 or VALGRIND or WRAPPER or sanitized(PROBE):
            self.skipTest("runs the probe itself as root (setuid, mount namespaces)")
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="ncclshim-limits-"))
        self.addCleanup(shutil.rmtree, self.root)
        os.chmod(self.root, 0o755)

    def check(self, proc):
        self.assertEqual(proc.returncode in (0, 1), True, proc.stderr)
        d = json.loads(proc.stdout)["doctor"]
        wrong = [f for f in d["findings"] if "a plain process fails" in f["finding"]]
        self.assertFalse(wrong, "%s\n%s" % (wrong, d["plain_process_error"]))
        self.assertIn(d["plain_process_source"], ("loader", "unknown: the dynamic loader could "
                                                  "not be asked"))

    def test_setuid_probe(self):
        setpriv = shutil.which("setpriv")
        probe = os.path.join(self.root, "ncclshim-probe")
        with open(PROBE, "rb") as f:
            data = f.read()
        at = data.find(b"$ORIGIN/..")
        if setpriv is None or at < 0:
            self.skipTest("needs setpriv and a probe whose RUNPATH is $ORIGIN/..")
        end = data.index(b"\0", at)
        if len(self.root) > end - at:
            self.skipTest("the scratch path does not fit in the probe's RUNPATH")
        # A secure process ignores $ORIGIN: the RUNPATH becomes the scratch directory itself.
        data = data[:at] + self.root.encode().ljust(end - at, b"\0") + data[end:]
        with open(probe, "wb") as f:
            f.write(data)
        shutil.copy(os.path.join(os.path.dirname(PROBE), "..", "libncclshim.so.0"), self.root)
        os.chmod(probe, 0o4755)
        proc = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                               probe, "--doctor", "--json"], capture_output=True,
                              universal_newlines=True, timeout=60 * TIMEOUT_MULTIPLIER,
                              env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
        self.check(proc)

    def test_proc_hidden(self):
        script = 'mount -t tmpfs none /proc && exec "$@"'
        lib_dir = os.path.realpath(os.path.join(os.path.dirname(PROBE), ".."))
        proc = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", PROBE, "--doctor",
                               "--json"], capture_output=True, universal_newlines=True,
                              timeout=60 * TIMEOUT_MULTIPLIER,
                              env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                                   "LD_LIBRARY_PATH": lib_dir})
        if proc.returncode != 0 and not proc.stdout:
            self.skipTest("no private mount namespace here: " + proc.stderr.strip())
        self.check(proc)


class Documentation(unittest.TestCase):
    """Every key --explain and --doctor write is in the man page and docs/reference.md."""

    def test_keys(self):
        m = Machine(self)
        venv = m.venv("venv", fake("cuda13.0"), [("nvidia-nccl-cu13", "2.28.9")])
        keys = set()

        def walk(value):
            if isinstance(value, dict):
                for k, v in value.items():
                    keys.add(k)
                    walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)
        walk(run_json("--doctor", env=m.env(VIRTUAL_ENV=venv))[1])
        walk(run_json("--explain", "undefined symbol: ncclSend", env=m.env(VIRTUAL_ENV=venv))[1])
        with open(MAN_PAGE, encoding="utf-8") as f:
            man = f.read().replace("\\-", "-").replace("\\e", "\\")
        with open(REFERENCE, encoding="utf-8") as f:
            reference = f.read()
        self.assertTrue({"findings", "what_to_do", "has_symbol", "packages"} <= keys, keys)
        self.assertEqual(sorted(k for k in keys if not re.search(r"\b%s\b" % k, man)), [])
        self.assertEqual(sorted(k for k in keys
                                if not re.search(r"`(?:[a-z_]+\.)?%s`" % k, reference)), [])


if __name__ == "__main__":
    # The cases hide the machine's own NCCL with ld.so --audit, which a probe started by
    # valgrind does not get, and they give the probe PATH=/nonexistent; the asan job checks
    # the doctor's memory instead.
    run_tests(VALGRIND and "the doctor's cases need ld.so --audit, which valgrind's run cannot "
              "take")

#!/usr/bin/env python3
"""The Python package over this build's libncclshim and probe, on the fake NCCLs: loaded()
names what the interpreter has mapped (none, one, two, one under another name), probe()
returns the dataclass, explain() and doctor() the probe's answers, `python -m ncclshim` its
command line, and an unactivated venv's interpreter gets its wheel; _native.Entry has C's
layout of ncclshim_nccl_entry.
   test_api.py PACKAGE_DIR LIBNCCLSHIM PROBE FAKE_DIR SANITIZE
with ENTRY_LAYOUT (the entry_layout program) in the environment."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import PACKAGE, fake, run_python, skip_if_needed, child_env, package_env, LIBRARY, PROBE

LOADED = """
import ctypes, dataclasses, json, sys, ncclshim
for path in %r:
    ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
print(json.dumps([dataclasses.asdict(x) for x in ncclshim.loaded()]))
"""


def loaded_after(*paths):
    return json.loads(run_python(LOADED % (list(paths),)))


class Loaded(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def copy(self, variant, name):
        path = os.path.join(self.dir, variant, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copy(fake(variant), path)
        return path

    def test_none(self):
        self.assertEqual(loaded_after(), [])

    def test_one(self):
        path = self.copy("2.28.9", "libnccl.so.2")
        found = loaded_after(path)
        self.assertEqual([(x["path"], x["version"], x["mapped"]) for x in found],
                         [(os.path.realpath(path), "2.28.9", True)])

    def test_two_copies(self):
        a = self.copy("2.28.3", "libnccl.so.2")
        b = self.copy("2.29.7", "libnccl.so.2")
        found = loaded_after(a, b)
        self.assertEqual(sorted((x["path"], x["version"]) for x in found),
                         sorted([(os.path.realpath(a), "2.28.3"), (os.path.realpath(b), "2.29.7")]))

    def test_plugins_are_not_nccls(self):
        """An NCCL plugin (libnccl-net.so, libnccl-tuner-x.so) is no NCCL."""
        net = self.copy("no-version", "libnccl-net.so")
        tuner = self.copy("no-version", "libnccl-tuner-example.so")
        self.assertEqual(loaded_after(net, tuner), [])

    def test_other_name(self):
        """Found by its ncclGetVersion, whatever the file is called."""
        path = self.copy("2.27.3", "libcustom_collectives.so")
        self.assertEqual([(x["path"], x["version"]) for x in loaded_after(path)],
                         [(os.path.realpath(path), "2.27.3")])


ENTRY_FIELDS = """
import ctypes
from ncclshim._native import Entry
print("ncclshim_nccl_entry", ctypes.sizeof(Entry))
for name, _ in Entry._fields_:
    print("ncclshim_nccl_entry.%s" % name, getattr(Entry, name).offset)
"""


class EntryLayout(unittest.TestCase):
    def test_entry_matches_c(self):
        """Same fields, in C's order, at C's offsets, and the same size: loaded() reads
        libncclshim's array of entries through it."""
        c = subprocess.run([os.environ["ENTRY_LAYOUT"]], capture_output=True, text=True,
                           check=True).stdout.split("\n")
        self.assertEqual(run_python(ENTRY_FIELDS).split("\n"), c)


class ProbeAndDoctor(unittest.TestCase):
    def test_probe_dataclass(self):
        out = run_python("import dataclasses, json, ncclshim\n"
                         "p = ncclshim.probe()\n"
                         "assert isinstance(p, ncclshim.Probe), type(p)\n"
                         "d = dataclasses.asdict(p); d.pop('raw')\n"
                         "print(json.dumps(d))", NCCLSHIM_NCCL_LIBRARY=fake("cuda13.0"))
        p = json.loads(out)
        self.assertEqual((p["found"], p["version"], p["found_via"], p["build"]),
                         (True, "2.28.9", "environment", "+cuda13.0"))
        self.assertEqual(p["path"], os.path.realpath(fake("cuda13.0")))
        self.assertIn("symmetric-memory", p["capabilities"])
        self.assertTrue(p["fingerprint"].startswith("nccl2.28.9-"))

    def test_explain_and_doctor(self):
        venv = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, venv)
        lib = os.path.join(venv, "lib", "python3.12", "site-packages", "nvidia", "nccl", "lib")
        os.makedirs(lib)
        shutil.copy(fake("b2.29.3-cuda12.9"), os.path.join(lib, "libnccl.so.2"))
        out = run_python("import json, ncclshim\n"
                         "x = ncclshim.explain('undefined symbol: ncclCommResume')\n"
                         "d = ncclshim.doctor()\n"
                         "print(json.dumps([x, d]))", VIRTUAL_ENV=venv)
        x, d = json.loads(out)
        self.assertEqual((x["kind"], x["symbol"], x["since"]),
                         ("undefined-symbol", "ncclCommResume", "2.29.7"))
        wheel = [c for c in x["copies"] if c["path"] == os.path.join(os.path.realpath(lib),
                                                                     "libnccl.so.2")]
        self.assertEqual([c["has_symbol"] for c in wheel], [False])
        self.assertIsInstance(d["problems"], int)
        self.assertIn(os.path.realpath(venv), [e["prefix"] for e in d["python_envs"]])

    def test_command_line(self):
        env = package_env()
        proc = subprocess.run([sys.executable, "-m", "ncclshim", "--json", "--no-devices",
                               "--library", fake("2.28.9")], env=env, capture_output=True,
                              text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["nccl"]["version"], "2.28.9")
        proc = subprocess.run([sys.executable, "-m", "ncclshim", "--explain", "Segfault"],
                              env=env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("cannot tell", proc.stdout)
        proc = subprocess.run([sys.executable, "-m", "ncclshim", "--loaded", "--json"], env=env,
                              capture_output=True, text=True)
        self.assertEqual(json.loads(proc.stdout), {"loaded": []})


class NonVenvInterpreter(unittest.TestCase):
    """A prefix without pyvenv.cfg whose bin/python3 links to this interpreter, with a wheel
    NCCL: Python follows the link and imports from this interpreter's own prefix, never from
    that one, so neither probe() nor ncclshim_init inside it takes that wheel."""

    def test_probe_sees_the_interpreters_prefix(self):
        prefix = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, prefix)
        os.makedirs(os.path.join(prefix, "bin"))
        python = os.path.join(prefix, "bin", "python3")
        os.symlink(os.path.realpath(sys.executable), python)
        wheel = os.path.join(prefix, "lib", "python%d.%d" % sys.version_info[:2],
                             "site-packages", "nvidia", "nccl", "lib")
        os.makedirs(wheel)
        shutil.copy(fake("2.28.9"), os.path.join(wheel, "libnccl.so.2"))
        out = run_python("import ncclshim; p = ncclshim.probe(); print(p.path, p.found_via)",
                         python=python)
        self.assertNotEqual(out.split()[0], os.path.realpath(os.path.join(wheel, "libnccl.so.2")))


class CommandLineProblems(unittest.TestCase):
    """`python -m ncclshim` says an environment problem in one line and exits 2
    (1 means "a problem found"), keeps the probe's exit codes, and runs only its own probe."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def run_module(self, *args, probe=PROBE, **env):
        full = package_env(NCCLSHIM_PYTHON_PROBE=probe, **env)
        return subprocess.run([sys.executable, "-m", "ncclshim", *args], env=full,
                              capture_output=True, text=True)

    def assert_environment_problem(self, proc, words):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertIn(words, proc.stderr)

    def test_missing_and_not_executable_probe(self):
        missing = os.path.join(self.dir, "no-such-probe")
        self.assert_environment_problem(self.run_module("--doctor", probe=missing),
                                        "does not exist")
        plain = os.path.join(self.dir, "ncclshim-probe")
        shutil.copy(PROBE, plain)
        os.chmod(plain, 0o644)
        self.assert_environment_problem(self.run_module("--doctor", probe=plain),
                                        "not executable")

    def test_never_a_probe_from_path(self):
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        marker = os.path.join(self.dir, "ran")
        impostor = os.path.join(bin_dir, "ncclshim-probe")
        with open(impostor, "w") as f:
            f.write("#!/bin/sh\ntouch %s\necho '{}'\n" % marker)
        os.chmod(impostor, 0o755)
        env = child_env(PYTHONPATH=PACKAGE, NCCLSHIM_PYTHON_LIBRARY=LIBRARY,
                        PATH=bin_dir + ":" + os.environ.get("PATH", ""))
        proc = subprocess.run([sys.executable, "-m", "ncclshim", "--json"], env=env,
                              capture_output=True, text=True)
        self.assertFalse(os.path.exists(marker), "the probe on PATH was run")
        self.assert_environment_problem(proc, "bundled probe")

    def test_texts_no_command_line_carries(self):
        full = package_env()
        for text, words in (("'x' * (1 << 20)", "cannot start %s:" % PROBE),
                            ("'a\\0b'", "NUL byte")):
            code = ("import sys; from ncclshim.__main__ import main; "
                    "sys.exit(main(['--explain', %s]))" % text)
            proc = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                                  text=True)
            self.assert_environment_problem(proc, words)  # the probe, not the interpreter
            self.assertNotIn(sys.executable, proc.stderr)

    def test_output_that_cannot_be_written(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        for args in (["--no-devices", "--library", fake("2.28.9")], ["--help"]):
            with open("/dev/full", "w") as full:
                proc = subprocess.run([sys.executable, "-m", "ncclshim", *args], stdout=full,
                                      stderr=subprocess.PIPE, text=True,
                                      env=package_env(NCCLSHIM_PYTHON_PROBE=PROBE))
            self.assert_environment_problem(proc, "cannot write the output")
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)

    def test_probe_exit_codes_kept(self):
        self.assertEqual(self.run_module("--bogus").returncode, 2)
        self.assertEqual(self.run_module("--require", "99.0", "--no-devices",
                                         "--library", fake("2.28.9")).returncode, 1)


class UnactivatedVenv(unittest.TestCase):
    """The venv's own python3, VIRTUAL_ENV unset: the doctor and the probe still see its
    wheel, because the package passes the interpreter's environment to the probe."""

    def test_venv_python(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        venv = os.path.join(root, "venv")
        if subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv],
                          capture_output=True).returncode != 0:
            self.skipTest("python3 -m venv does not work here (python3-venv missing)")
        python = os.path.join(venv, "bin", "python3")
        site = run_python("import sysconfig; print(sysconfig.get_paths()['purelib'])",
                          python=python).strip()
        lib = os.path.join(site, "nvidia", "nccl", "lib")
        os.makedirs(lib)
        shutil.copy(fake("cuda13.0"), os.path.join(lib, "libnccl.so.2"))
        wheel = os.path.join(os.path.realpath(lib), "libnccl.so.2")
        out = run_python("import json, ncclshim\n"
                         "p = ncclshim.probe()\n"
                         "print(json.dumps([p.path, p.found_via, ncclshim.doctor()]))",
                         python=python)
        path, via, doctor = json.loads(out)
        self.assertEqual((path, via), (wheel, "active-environment"))
        env = [e for e in doctor["python_envs"] if e["prefix"] == os.path.realpath(venv)]
        self.assertEqual([e["loads"] for e in env], [wheel])


if __name__ == "__main__":
    skip_if_needed()
    unittest.main(argv=[sys.argv[0]], verbosity=2)

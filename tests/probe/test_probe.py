#!/usr/bin/env python3
"""ncclshim-probe against the fake NCCLs: its JSON parses and says the right thing, its exit
codes follow --require, bad options give usage and exit 2, and hostile paths still give valid
JSON. Each run gets exactly the environment given, and no NCCL or libcuda of the machine's own.
   test_probe.py PROBE FAKE_DIR HIDE_AUDIT"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

PROBE, FAKE_DIR, HIDE_AUDIT = sys.argv[1], sys.argv[2], sys.argv[3]


def interpreter():
    with open(PROBE, "rb") as f:
        data = f.read(4096)
    start = data.index(b"/lib")
    return data[start:data.index(b"\0", start)].decode()


def fake(variant):
    return os.path.join(FAKE_DIR, "libfake-nccl-%s.so" % variant)


def probe(*args, env=None, raw=False):
    # No ld.so cache, and system-wide NCCL and libcuda hidden (tests/hide_system.c).
    cmd = [interpreter(), "--inhibit-cache", "--audit", HIDE_AUDIT, PROBE, *args]
    # ncclshim reads the ld.so cache itself: inhibited too, as ld.so's is.
    proc = subprocess.run(cmd, env={"NCCLSHIM_LD_CACHE": "/dev/null", **(env or {})},
                          capture_output=True)
    if raw:
        return proc
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def probe_json(*args, env=None):
    code, out, err = probe("--json", *args, env=env)
    return code, json.loads(out), err


class Json(unittest.TestCase):
    def test_found(self):
        code, doc, _ = probe_json("--library", fake("2.28.9"))
        self.assertEqual(code, 0)
        nccl = doc["nccl"]
        self.assertTrue(nccl["found"])
        self.assertEqual(nccl["status"], "OK")
        self.assertEqual(nccl["version"], "2.28.9")
        self.assertEqual(nccl["version_code"], 22809)
        self.assertEqual(nccl["found_via"], "explicit")
        self.assertEqual(nccl["path"], os.path.realpath(fake("2.28.9")))
        self.assertFalse(nccl["preloaded"])
        self.assertIn("symmetric-memory", nccl["capabilities"])
        self.assertNotIn("grow", nccl["capabilities"])
        self.assertIn("ncclCommGrow", nccl["missing_symbols"])
        self.assertEqual(nccl["unexpected_missing"], [])
        self.assertEqual([a["result"] for a in nccl["attempts"]], ["OK"])
        self.assertEqual(doc["ncclshim"]["version"], "0.1.0")
        self.assertTrue(doc["fingerprint"].startswith("nccl2.28.9-b"))
        self.assertFalse(doc["cuda"]["found"])
        self.assertEqual(doc["cuda"]["devices"], [])

    def test_absent(self):
        code, doc, _ = probe_json()
        self.assertEqual(code, 0)
        self.assertFalse(doc["nccl"]["found"])
        self.assertEqual(doc["nccl"]["status"], "NOT_FOUND")
        self.assertIsNone(doc["nccl"]["path"])
        self.assertIsNone(doc["nccl"]["version"])
        hows = [a["how"] for a in doc["nccl"]["attempts"]]
        self.assertEqual(hows[:3], ["already-loaded", "ld-cache", "system-search"])
        self.assertTrue(doc["fingerprint"].startswith("none-e"))

    def test_environment_and_unexpected(self):
        code, doc, _ = probe_json(env={"NCCLSHIM_NCCL_LIBRARY": fake("missing-optional")})
        self.assertEqual(code, 0)
        self.assertEqual(doc["nccl"]["found_via"], "environment")
        self.assertEqual(doc["nccl"]["unexpected_missing"], ["ncclCommWindowRegister"])
        self.assertNotIn("window-register", doc["nccl"]["capabilities"])

    def test_too_old_and_broken(self):
        lib = tempfile.mkdtemp()
        os.symlink(fake("2.21.5"), os.path.join(lib, "libnccl.so.2"))
        _, doc, _ = probe_json(env={"LD_LIBRARY_PATH": lib})
        self.assertEqual(doc["nccl"]["version"], "2.21.5")
        self.assertEqual(doc["nccl"]["found_via"], "library-path")
        code, doc, err = probe_json("--require", "2.28", env={"LD_LIBRARY_PATH": lib})
        self.assertEqual(code, 1)
        self.assertIn("requirement not met: NCCL >= 2.28; found 2.21.5", err)
        _, doc, _ = probe_json("--library", fake("missing-required"))
        self.assertEqual(doc["nccl"]["status"], "MISSING_SYMBOLS")
        self.assertIn("ncclAllReduce", doc["nccl"]["message"])
        _, doc, _ = probe_json("--library", fake("3.0.0"))
        self.assertEqual(doc["nccl"]["status"], "WRONG_MAJOR")

    def test_stub_driver(self):
        stubs = sorted(glob.glob("/usr/local/cuda*/lib*/stubs/libcuda.so") +
                       glob.glob("/usr/local/cuda*/targets/*/lib/stubs/libcuda.so"))
        if not stubs:
            self.skipTest("no CUDA toolkit stub libcuda.so on this machine")
        code, doc, _ = probe_json(env={"NCCLSHIM_CUDA_LIBRARY": stubs[0]})
        self.assertEqual(code, 0)
        cuda = doc["cuda"]
        self.assertFalse(cuda["found"])
        self.assertEqual(cuda["status"], "DRIVER_UNAVAILABLE")
        self.assertIn("stub", cuda["message"])
        self.assertEqual(cuda["devices"], [])

    def test_hostile_path_is_valid_json(self):
        d = tempfile.mkdtemp().encode()
        name = d + b'/a"b\\c\nd\te\x01f\xff\xfeg\xc3\x28.so'
        with open(name, "wb") as f:
            f.write(b"not an ELF file")
        proc = probe("--json", "--library", name, raw=True)
        self.assertEqual(proc.returncode, 0)
        doc = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8 and JSON
        self.assertEqual(doc["nccl"]["status"], "LOAD_FAILED")
        candidate = doc["nccl"]["attempts"][0]["candidate"]
        self.assertIn('a"b\\c\nd\te\x01f', candidate)
        self.assertIn("\ufffd", candidate)


class Text(unittest.TestCase):
    def test_report(self):
        code, out, _ = probe("-v", "--library", fake("2.27.3"))
        self.assertEqual(code, 0)
        self.assertIn("NCCL: 2.27.3", out)
        self.assertIn("found via:  explicit", out)
        self.assertRegex(out, r"no  symmetric-memory +NCCL >= 2.28.0 +needs NCCL >= 2.28.0; loaded 2.27.3")
        self.assertIn("searched:", out)
        self.assertIn("fingerprint: nccl2.27.3-", out)

    def test_absent_report(self):
        code, out, _ = probe()
        self.assertEqual(code, 0)
        self.assertIn("NCCL: not available (NOT_FOUND: libnccl.so.2 was not found; searched:", out)
        self.assertIn("CUDA driver: not available", out)


class Requirements(unittest.TestCase):
    def test_met(self):
        code, _, err = probe("--require", "2.28.3", "--require", "symmetric-memory",
                             "--library", fake("2.28.9"))
        self.assertEqual((code, err), (0, ""))

    def test_unmet(self):
        code, _, err = probe("--require", "revoke", "--library", fake("2.28.3"))
        self.assertEqual(code, 1)
        self.assertIn("requirement not met: revoke: needs NCCL >= 2.28.7; loaded 2.28.3", err)
        code, _, err = probe("--require", "2.18")
        self.assertEqual(code, 1)
        self.assertIn("no NCCL", err)

    def test_usage_errors(self):
        for args in (["--bogus"], ["--require"], ["--require", "fast"], ["--require", "2"],
                     ["--library"]):
            code, out, err = probe(*args)
            self.assertEqual(code, 2, args)
            self.assertIn("usage: ncclshim-probe", err)
        code, out, _ = probe("--help")
        self.assertEqual(code, 0)
        self.assertIn("Exit status: 0 report made", out)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)

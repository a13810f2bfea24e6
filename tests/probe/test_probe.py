#!/usr/bin/env python3
"""ncclshim-probe against the fake NCCLs and fake drivers: its JSON parses and says the right
thing, its exit codes follow --require, bad options give usage and exit 2, hostile paths still
give valid JSON and cannot forge a line of the text report, and the man page and reference
document every option and JSON key it has. Each run gets exactly the environment given, and
no NCCL or libcuda of the machine's own.
   test_probe.py PROBE FAKE_DIR HIDE_AUDIT CUDA_FAKE_DIR MAN_PAGE REFERENCE_MD
with NCCLSHIM_PROJECT_VERSION (meson's project version) in the environment.
With PROBE_VALGRIND set (valgrind and its options), every probe runs under it and a memcheck
error or a definite leak fails the test."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from probe_files import VALGRIND, ProbeRunner, elf_machine, run_tests

PROBE, FAKE_DIR, HIDE_AUDIT, CUDA_FAKE_DIR, MAN_PAGE, REFERENCE = map(os.path.abspath,
                                                                      sys.argv[1:7])
# Under valgrind the machine's NCCL is not hidden (no audit module): main() makes sure there
# is none in the loader's default directories.
RUNNER = ProbeRunner(PROBE, FAKE_DIR, HIDE_AUDIT)
fake, probe, probe_json = RUNNER.fake, RUNNER.text, RUNNER.json


def fake_cuda(variant):
    return os.path.join(CUDA_FAKE_DIR, "libfake-cuda-%s.so" % variant)


# The loader's default directories: ld.so --inhibit-cache still searches them.
DEFAULT_DIRS = ["/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]


def installed_in_default_dirs():
    return [p for d in DEFAULT_DIRS for p in glob.glob(os.path.join(d, "lib*.so*"))
            if os.path.basename(p).startswith(("libnccl.so", "libcuda.so"))]


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
        self.assertIn("ncclCommGrow", nccl["newer_than_loaded"])
        self.assertEqual(nccl["unexpectedly_missing"], [])
        self.assertEqual([a["status"] for a in nccl["attempts"]], ["OK"])
        self.assertEqual([a["found_via"] for a in nccl["attempts"]], ["explicit"])
        self.assertEqual(doc["schema_version"], 2)
        self.assertEqual((doc["requirements"], doc["requirements_met"]), ([], True))
        self.assertEqual(doc["ncclshim"]["version"], os.environ["NCCLSHIM_PROJECT_VERSION"])
        self.assertTrue(doc["fingerprint"].startswith("nccl2.28.9-b"))
        self.assertIsNone(doc["fingerprint_content"])
        self.assertFalse(doc["cuda"]["found"])
        self.assertEqual(doc["cuda"]["devices"], [])

    def test_nccl_2_32_capabilities(self):
        new = ["coll-config", "launch-event", "encryption", "nvls-host-mode", "cft"]
        code, doc, _ = probe_json("--library", fake("2.32.3"))
        self.assertEqual(code, 0)
        self.assertEqual(doc["nccl"]["version"], "2.32.3")
        for cap in new:
            self.assertIn(cap, doc["nccl"]["capabilities"])
        self.assertEqual(doc["nccl"]["newer_than_loaded"], [])
        _, older, _ = probe_json("--library", fake("2.30.7"))
        for cap in new:
            self.assertNotIn(cap, older["nccl"]["capabilities"])
        self.assertIn("ncclAllReduceConfig", older["nccl"]["newer_than_loaded"])
        self.assertIn("ncclSetEncryption", older["nccl"]["newer_than_loaded"])
        code, text, _ = probe("--library", fake("2.32.3"), "--require", "coll-config",
                              "--require", "encryption")
        self.assertEqual(code, 0, text)
        self.assertIn("coll-config", text)
        code, text, _ = probe("--library", fake("2.30.7"), "--require", "coll-config")
        self.assertNotEqual(code, 0, text)
        self.assertIn("2.32.3", text)

    def test_verify_hashes_the_bytes(self):
        code, doc, _ = probe_json("--verify", "--library", fake("2.28.9"))
        self.assertEqual(code, 0)
        content = doc["fingerprint_content"]
        self.assertTrue(content.startswith("nccl2.28.9-f"), content)
        # Same version, capabilities and environment parts; only the file part differs.
        self.assertEqual(content.split("-")[2:], doc["fingerprint"].split("-")[3:])

    def test_absent(self):
        code, doc, _ = probe_json()
        self.assertEqual(code, 0)
        self.assertFalse(doc["nccl"]["found"])
        self.assertEqual(doc["nccl"]["status"], "NOT_FOUND")
        self.assertIsNone(doc["nccl"]["path"])
        self.assertIsNone(doc["nccl"]["version"])
        # LD_LIBRARY_PATH's directories come second when it is set (valgrind's runs set it).
        hows = [a["found_via"] for a in doc["nccl"]["attempts"] if a["found_via"] != "library-path"]
        self.assertEqual(hows, ["already-loaded", "active-environment", "ld-cache",
                                "system-search", "well-known-place"])
        self.assertTrue(doc["fingerprint"].startswith("none-e"))

    def test_environment_and_unexpected(self):
        code, doc, _ = probe_json(env={"NCCLSHIM_NCCL_LIBRARY": fake("missing-optional")})
        self.assertEqual(code, 0)
        self.assertEqual(doc["nccl"]["found_via"], "environment")
        # Missing although 2.28.9 should have it: listed as such, not as merely newer.
        self.assertEqual(doc["nccl"]["unexpectedly_missing"], ["ncclCommWindowRegister"])
        self.assertNotIn("ncclCommWindowRegister", doc["nccl"]["newer_than_loaded"])
        self.assertIn("ncclCommGrow", doc["nccl"]["newer_than_loaded"])
        self.assertNotIn("window-register", doc["nccl"]["capabilities"])

    def test_too_old_and_broken(self):
        lib = tempfile.mkdtemp()
        os.symlink(fake("2.21.5"), os.path.join(lib, "libnccl.so.2"))
        _, doc, _ = probe_json(env={"LD_LIBRARY_PATH": lib})
        self.assertEqual(doc["nccl"]["version"], "2.21.5")
        self.assertEqual(doc["nccl"]["found_via"], "library-path")
        code, doc, err = probe_json("--require", "2.28", env={"LD_LIBRARY_PATH": lib})
        self.assertEqual(code, 1)
        self.assertIn("requirement not met: 2.28: needs NCCL >= 2.28.0; loaded 2.21.5", err)
        self.assertEqual(doc["requirements"], [{
            "requirement": "2.28", "kind": "version", "met": False,
            "reason": "needs NCCL >= 2.28.0; loaded 2.21.5"}])
        self.assertFalse(doc["requirements_met"])
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
        # The probe's own architecture only (an aarch64 build under qemu-user cannot load the
        # machine's x86-64 stub).
        foreign = [s for s in stubs if elf_machine(s) != elf_machine(PROBE)]
        stubs = [s for s in stubs if s not in foreign]
        if not stubs:
            self.skipTest("no toolkit stub libcuda.so of the probe's architecture (e_machine %d):"
                          " %s" % (elf_machine(PROBE), " ".join(foreign)))
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
        proc = RUNNER.run("--json", "--library", name)
        self.assertEqual(proc.returncode, 0)
        doc = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8 and JSON
        self.assertEqual(doc["nccl"]["status"], "LOAD_FAILED")
        candidate = doc["nccl"]["attempts"][0]["candidate"]
        self.assertIn('a"b\\c\nd\te\x01f', candidate)
        self.assertIn("\ufffd", candidate)

    def test_dlopen_reason_names_the_file_once(self):
        """dlopen's own text starts with the path the message already gives: said once."""
        code, doc, _ = probe_json("--library", PROBE)  # an executable: glibc refuses a PIE
        message = doc["nccl"]["message"]
        if "cannot dynamically load" not in message:
            self.skipTest("this glibc loads the executable: %s" % message)
        self.assertEqual(message.count(PROBE), 1, message)
        self.assertIn(PROBE + ": cannot dynamically load", message)


class Text(unittest.TestCase):
    def test_report(self):
        code, out, _ = probe("-v", "--library", fake("2.27.3"))
        self.assertEqual(code, 0)
        self.assertIn("NCCL: 2.27.3", out)
        self.assertIn("found via:  explicit", out)
        self.assertRegex(out, r"no  symmetric-memory +NCCL >= 2.28.0 +"
                              r"needs NCCL >= 2.28.0; loaded 2.27.3")
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

    def test_every_combination_honoured_or_refused(self):
        """The report's options with --doctor or --explain, and an empty --library,
        are refused (exit 2), never silently dropped."""
        for mode in (["--doctor"], ["--explain", "undefined symbol: ncclSend"]):
            for extra in (["--require", "2.28"], ["--library", fake("2.28.9")], ["--verify"],
                          ["--no-devices"], ["-v"]):
                code, out, err = probe(*mode, *extra)
                self.assertEqual((code, out), (2, ""), mode + extra)
                self.assertIn("goes with the report", err)
        code, out, err = probe("--library", "")
        self.assertEqual((code, out), (2, ""))
        self.assertIn("needs a path", err)
        # One library, one text: a second one would replace the first unseen.
        for args, said in ((["--library", fake("2.28.9"), "--library", fake("2.18.5")],
                            "--library given twice"),
                           (["--explain", "undefined symbol: ncclSend", "--explain", "x"],
                            "--explain given twice")):
            code, out, err = probe(*args)
            self.assertEqual((code, out), (2, ""), args)
            self.assertIn(said, err, args)

    def test_usage_errors_under_json_are_json(self):
        for args in (["--bogus"], ["--library"], ["--doctor", "--explain", "x"],
                     ["--doctor", "--require", "2.28"]):
            code, out, err = probe("--json", *args)
            self.assertEqual(code, 2, args)
            doc = json.loads(out)
            self.assertEqual(doc["error"]["kind"], "usage", args)
            self.assertTrue(doc["error"]["message"], args)
        code, out, _ = probe("--explain", "--json", "--doctor")  # a value, not the option
        self.assertEqual((code, out), (2, ""))

    def test_usage_errors_escape_the_argument(self):
        """An unknown option is the user's text: on stderr its control characters and bytes
        that are not UTF-8 come escaped (no terminal sequence, no forged line), and under
        --json the document stays valid."""
        for arg in (b"--\x1b]0;owned\x07", b"--bad\nline", b'--x\xff"', b"--\x9b2J"):
            proc = RUNNER.run("--json", os.fsdecode(arg))
            self.assertEqual(proc.returncode, 2, arg)
            first = proc.stderr.split(b"\n\n", 1)[0]
            self.assertRegex(first, rb"^ncclshim-probe: unknown option '--\S+'$", arg)
            self.assertNotRegex(first, rb"[\x00-\x1f\x7f\x80-\x9f]", arg)
            first.decode("utf-8")  # strictly UTF-8
            message = json.loads(proc.stdout)["error"]["message"]
            self.assertIn("unknown option '", message, arg)

    def test_write_errors_exit_2(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        for args in ([], ["--json"], ["--doctor"], ["--explain", "undefined symbol: ncclSend"]):
            with open("/dev/full", "w") as full:
                proc = RUNNER.run(*args, stdout=full)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn(b"cannot write the report", proc.stderr)


class RelativeLibrary(unittest.TestCase):
    """--library takes a path relative to the current directory and hands the loader an
    absolute one, which is all NCCLSHIM_NCCL_LIBRARY accepts."""

    def test_bare_and_dotted_names(self):
        for name in ("libfake-nccl-2.28.9.so", "./libfake-nccl-2.28.9.so"):
            code, doc, _ = probe_json("--library", name, cwd=FAKE_DIR)
            self.assertEqual(code, 0, name)
            self.assertEqual(doc["nccl"]["status"], "OK", name)
            self.assertEqual(doc["nccl"]["found_via"], "explicit", name)
            candidate = doc["nccl"]["attempts"][0]["candidate"]
            self.assertTrue(os.path.isabs(candidate), candidate)
            self.assertEqual(os.path.realpath(candidate), os.path.realpath(fake("2.28.9")))

    def test_environment_still_refuses_relative(self):
        _, doc, _ = probe_json(env={"NCCLSHIM_NCCL_LIBRARY": "libfake-nccl-2.28.9.so"},
                               cwd=FAKE_DIR)
        self.assertEqual(doc["nccl"]["status"], "INVALID_ARGUMENT")

    def test_missing_relative_file_names_the_absolute_path(self):
        _, doc, _ = probe_json("--library", "no-such-nccl.so", cwd=FAKE_DIR)
        self.assertNotEqual(doc["nccl"]["status"], "OK")
        self.assertEqual(doc["nccl"]["attempts"][0]["candidate"],
                         os.path.join(FAKE_DIR, "no-such-nccl.so"))


class HostileText(unittest.TestCase):
    """Control characters of a path cannot forge lines of the text report."""

    def setUp(self):
        self.dir = tempfile.mkdtemp().encode()
        self.addCleanup(shutil.rmtree, self.dir)

    def run_text(self, name, *args):
        os.makedirs(os.path.dirname(name), exist_ok=True)
        shutil.copy(fake("2.28.9"), name)
        proc = RUNNER.run("-v", "--library", name, *args)
        self.assertEqual(proc.returncode, 0)
        return proc.stdout

    def test_newline_does_not_forge_a_line(self):
        name = self.dir + b"/x\nNCCL: 9.9.9\n  path:       /forged\r\x1b[2J\x9b\x7f\\.so"
        out = self.run_text(name)
        lines = out.split(b"\n")
        self.assertEqual([x for x in lines if x.startswith(b"NCCL:")], [b"NCCL: 2.28.9"])
        self.assertFalse([x for x in lines if x.startswith(b"  path:       /forged")])
        for byte in b"\r\x1b\x9b\x7f":
            self.assertNotIn(bytes([byte]), out)
        self.assertIn(b"x\\nNCCL: 9.9.9\\n  path:       /forged\\r\\x1b[2J\\x9b\\x7f\\\\.so", out)
        out.decode("utf-8")  # strict: no byte that is not UTF-8

    def test_requirement_line_escaped(self):
        name = self.dir + b"/y\nncclshim-probe: all requirements met\n.so"
        with open(name, "wb") as f:
            f.write(b"not an ELF file")
        proc = RUNNER.run("--library", name, "--require", "2.18")
        self.assertEqual(proc.returncode, 1)
        lines = proc.stderr.split(b"\n")
        self.assertEqual(len([x for x in lines if x]), 1, proc.stderr)
        self.assertIn(b"y\\nncclshim-probe: all requirements met\\n.so", lines[0])

    def test_c1_controls_and_utf8(self):
        name = self.dir + "/é\u009b\u0085€.so".encode()
        out = self.run_text(name)
        self.assertIn("é\\u009b\\u0085€.so".encode(), out)
        self.assertNotIn("\u009b".encode(), out)

    def test_bidi_overrides_and_line_separators(self):
        """A name that a terminal would show reversed (U+202E) or broken (U+2028) is escaped."""
        name = self.dir + "/lib\u202eos.2\u2066\u2028x\u2029.so".encode()
        out = self.run_text(name)
        self.assertIn(b"/lib\\u202eos.2\\u2066\\u2028x\\u2029.so", out)
        for c in "\u202e\u2066\u2028\u2029":
            self.assertNotIn(c.encode(), out)


class Driver(unittest.TestCase):
    """NCCL's +cudaX.Y build tag against the driver's CUDA version, with fake drivers."""

    def run_pair(self, nccl, driver, *args):
        env = {"NCCLSHIM_CUDA_LIBRARY": fake_cuda(driver)} if driver else {}
        return probe_json("--no-devices", "--library", fake(nccl), "--require",
                          "driver-compatible", *args, env=env)

    def test_verdicts(self):
        cases = [  # nccl, driver, verdict, met
            ("cuda13.0", "13.0", "ok", True),
            ("cuda12.9", "13.0", "ok", True),
            ("cuda12.9", "12.2", "minor-older", True),
            ("cuda13.0", "12.2", "too-old", False),
            ("cuda12.9", "11.2", "too-old", False),
            ("2.28.9", "13.0", "unknown", False),   # no build tag
            ("cuda13.0", None, "unknown", False),   # no driver
        ]
        for nccl, driver, verdict, met in cases:
            with self.subTest(nccl=nccl, driver=driver):
                code, doc, err = self.run_pair(nccl, driver)
                check = doc["driver_compatibility"]
                self.assertEqual(check["verdict"], verdict)
                self.assertEqual(code, 0 if met else 1)
                self.assertEqual(doc["requirements_met"], met)
                self.assertEqual(doc["requirements"][0]["kind"], "driver")
                self.assertEqual(doc["requirements"][0]["met"], met)
                self.assertEqual(doc["requirements"][0]["reason"], check["reason"])
                self.assertEqual(check["driver_cuda"], driver)
                build = nccl[4:] if nccl.startswith("cuda") else None
                self.assertEqual(check["nccl_build_cuda"], build)
                self.assertEqual(doc["nccl"]["build"], "+" + nccl if build else "")
                self.assertEqual("requirement not met" in err, not met)

    def test_too_old_says_so_in_text(self):
        env = {"NCCLSHIM_CUDA_LIBRARY": fake_cuda("12.2")}
        code, out, err = probe("--no-devices", "--library", fake("cuda13.0"), env=env)
        self.assertEqual(code, 0)  # nothing required: a report, not a verdict
        self.assertIn("NCCL: 2.28.9+cuda13.0", out)
        self.assertRegex(out, r"driver vs NCCL: too-old \(the driver supports CUDA 12\.2, NCCL "
                              r"was built with 13\.0: communicator init will fail")


class RequirementResults(unittest.TestCase):
    def test_each_requirement_in_json(self):
        code, doc, err = probe_json("--require", "2.28", "--require", "revoke", "--require",
                                    "grow", "--library", fake("2.28.9"))
        self.assertEqual(code, 1)
        self.assertEqual([(r["requirement"], r["kind"], r["met"]) for r in doc["requirements"]],
                         [("2.28", "version", True), ("revoke", "capability", True),
                          ("grow", "capability", False)])
        self.assertEqual(doc["requirements"][0]["reason"], "needs NCCL >= 2.28.0; loaded 2.28.9")
        self.assertIn("needs NCCL >= 2.29.2; loaded 2.28.9", doc["requirements"][2]["reason"])
        self.assertFalse(doc["requirements_met"])
        self.assertEqual(err.count("requirement not met"), 1)

    def test_without_nccl(self):
        code, doc, _ = probe_json("--require", "2.18")
        self.assertEqual(code, 1)
        self.assertFalse(doc["requirements"][0]["met"])
        self.assertIn("no NCCL", doc["requirements"][0]["reason"])


def json_keys(value, into):
    if isinstance(value, dict):
        for k, v in value.items():
            into.add(k)
            json_keys(v, into)
    elif isinstance(value, list):
        for v in value:
            json_keys(v, into)
    return into


class Documentation(unittest.TestCase):
    """Every JSON key the probe writes, every option and exit status it has, is in the man
    page; every key also in docs/reference.md."""

    @classmethod
    def setUpClass(cls):
        driver = {"NCCLSHIM_CUDA_LIBRARY": fake_cuda("12.2")}
        docs = [probe_json("--library", fake("cuda13.0"), "--require", "2.28", "--require",
                           "driver-compatible", env=driver)[1],
                probe_json()[1]]
        cls.keys = set()
        for doc in docs:
            json_keys(doc, cls.keys)
        with open(MAN_PAGE, encoding="utf-8") as f:
            cls.man = f.read().replace("\\-", "-").replace("\\e", "\\")
        with open(REFERENCE, encoding="utf-8") as f:
            cls.reference = f.read()

    def test_enough_keys_seen(self):
        # The fake driver has devices: their keys are among those checked.
        self.assertTrue({"pci_bus_id", "p2p", "requirements", "verdict"} <= self.keys)

    def test_keys_in_man_page(self):
        missing = sorted(k for k in self.keys if not re.search(r"\b%s\b" % k, self.man))
        self.assertEqual(missing, [], "keys the man page does not document")

    def test_keys_in_reference(self):
        missing = sorted(k for k in self.keys
                         if not re.search(r"`(?:[a-z_]+\.)?%s`" % k, self.reference))
        self.assertEqual(missing, [], "keys docs/reference.md does not document")

    def test_options_and_exit_codes_in_man_page(self):
        _, usage, _ = probe("--help")
        options = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", usage))
        self.assertTrue({"--json", "--library", "--require", "-v", "--help"} <= options)
        missing = sorted(o for o in options if o not in self.man)
        self.assertEqual(missing, [], "options the man page does not document")
        exits = re.search(r"\.SH EXIT STATUS\n(.*?)\n\.SH", self.man, re.S).group(1)
        self.assertEqual(re.findall(r"^\.B (\d)$", exits, re.M), ["0", "1", "2"])

    def test_man_page_renders_cleanly(self):
        groff = shutil.which("groff")
        if groff is None:
            self.skipTest("no groff")
        proc = subprocess.run([groff, "-man", "-ww", "-z", MAN_PAGE], capture_output=True,
                              text=True)
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))


if __name__ == "__main__":
    run_tests(VALGRIND and installed_in_default_dirs() and "under valgrind the machine's own "
              "%s cannot be hidden" % installed_in_default_dirs())

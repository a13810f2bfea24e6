#!/usr/bin/env python3
"""ncclshim-probe's plugin report on fake plugins (built beside this test, each aborting in
its constructor, so a probe that loaded one would die): the accepted one names the ABI
symbol NCCL would take, the old one is flagged, --require plugins-compatible follows, and
the variables are resolved as NCCL does (a path, a bare name -> libnccl-net-<name>.so on
LD_LIBRARY_PATH, "none", a name no file matches).
   test_plugins.py PROBE FAKE_DIR PLUGIN_DIR
With PROBE_VALGRIND set (valgrind and its options, as probe_files.py takes it), every probe runs
under it and a memcheck error or a definite leak fails the test."""
import json
import os
import sys
import unittest

from probe_files import WRAPPER, run_probe_command, run_tests

PROBE, FAKE_DIR, PLUGIN_DIR = map(os.path.abspath, sys.argv[1:4])
NCCL = os.path.join(FAKE_DIR, "libfake-nccl-%s.so")
SYSTEM_DIRS = ["/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
               "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib"]


def plugin(name):
    return os.path.join(PLUGIN_DIR, "libnccl-%s.so" % name)


def run(env, *args, version="2.29.7"):
    """(exit status, stdout, stderr) of the probe, started by its path, on the fake NCCL of
    `version` with no ld.so cache and no driver, plus `env`."""
    full = {"NCCLSHIM_NCCL_LIBRARY": NCCL % version, "NCCLSHIM_LD_CACHE": "/dev/null",
            "NCCLSHIM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1", **env}
    cmd = [PROBE, "--no-devices", *args]
    proc = run_probe_command([*WRAPPER, *cmd], cmd, env=full, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def probe(env, *args, version="2.29.7"):
    code, out, err = run(env, "--json", *args, version=version)
    doc = json.loads(out)
    return code, {p["kind"]: p for p in doc["plugins"] if p["requested"] != "none"
                  or p["kind"] == "net"}, doc, err


class Plugins(unittest.TestCase):
    def test_nothing_set(self):
        code, plugins, doc, _ = probe({}, "--require", "plugins-compatible")
        self.assertEqual(sorted(plugins), ["env", "gin", "net", "profiler", "tuner"])
        # A machine with a real plugin installed under a default name reports that one.
        installed = {k for k in plugins if any(
            os.path.exists(os.path.join(d, "libnccl-%s.so" % k)) for d in SYSTEM_DIRS)}
        self.assertEqual({p["verdict"] for k, p in plugins.items() if k not in installed} or
                         {"absent"}, {"absent"})
        if not installed:
            self.assertEqual(code, 0)
            self.assertTrue(doc["plugins_compatible"])

    def test_accepted(self):
        code, plugins, doc, _ = probe({"NCCL_NET_PLUGIN": plugin("net-accepted")},
                                      "--require", "plugins-compatible")
        net = plugins["net"]
        self.assertEqual(code, 0, net)
        self.assertEqual(net["verdict"], "accepted")
        self.assertEqual(net["chosen"], "ncclNetPlugin_v8")
        self.assertEqual(sorted(net["exports"]), ["ncclNetPlugin_v8", "ncclTunerPlugin_v3"])
        self.assertEqual(net["path"], os.path.realpath(plugin("net-accepted")))
        # No tuner library of its own: NCCL takes the tuner from the net plugin's library.
        tuner = plugins["tuner"]
        self.assertEqual((tuner["verdict"], tuner["chosen"]), ("accepted", "ncclTunerPlugin_v3"))
        self.assertEqual(tuner["path"], net["path"])
        self.assertEqual(plugins["profiler"]["verdict"], "absent")

    def test_old_abi_flagged(self):
        code, plugins, doc, err = probe({"NCCL_NET_PLUGIN": plugin("net-old")},
                                        "--require", "plugins-compatible")
        net = plugins["net"]
        self.assertEqual(code, 1)
        self.assertEqual(net["verdict"], "refused")
        self.assertIsNone(net["chosen"])
        self.assertEqual(net["exports"], ["ncclNetPlugin_v4"])
        self.assertIn("accepts none", net["reason"])
        self.assertFalse(doc["plugins_compatible"])
        self.assertIn("requirement not met: plugins-compatible", err)
        self.assertIn("net-old", err)

    def test_bare_name_on_library_path(self):
        _, plugins, _, _ = probe({"NCCL_NET_PLUGIN": "accepted,old",
                                  "LD_LIBRARY_PATH": PLUGIN_DIR + "/nowhere"})
        self.assertEqual(plugins["net"]["verdict"], "not-found")
        code, _, doc, _ = probe({"NCCL_NET_PLUGIN": "net-accepted",
                                 "LD_LIBRARY_PATH": PLUGIN_DIR})
        # "net-accepted" -> libnccl-net-net-accepted.so: no such file; the list form next.
        nets = [p for p in doc["plugins"] if p["kind"] == "net"]
        self.assertEqual([p["verdict"] for p in nets], ["not-found"])
        link_dir = os.path.join(PLUGIN_DIR, "plugins-by-name")
        os.makedirs(link_dir, exist_ok=True)
        for name, target in (("libnccl-net-ok.so", "net-accepted"),
                             ("libnccl-net-old.so", "net-old")):
            link = os.path.join(link_dir, name)
            if not os.path.lexists(link):
                os.symlink(plugin(target), link)
        code, _, doc, _ = probe({"NCCL_NET_PLUGIN": "ok,old", "LD_LIBRARY_PATH": link_dir},
                                "--require", "plugins-compatible")
        nets = [p for p in doc["plugins"] if p["kind"] == "net"]
        self.assertEqual([(p["requested"], p["verdict"]) for p in nets],
                         [("ok", "accepted"), ("old", "refused")])
        self.assertEqual(code, 1)

    def test_none_and_no_abi(self):
        code, _, doc, _ = probe({"NCCL_NET_PLUGIN": "none",
                                 "NCCL_TUNER_PLUGIN": plugin("tuner-none")})
        by_kind = {p["kind"]: p for p in doc["plugins"]}
        self.assertEqual(by_kind["net"]["verdict"], "disabled")
        self.assertEqual(by_kind["tuner"]["verdict"], "no-abi")
        self.assertEqual(by_kind["tuner"]["exports"], [])

    def test_releases_checked_and_not(self):
        accepted = {"NCCL_NET_PLUGIN": plugin("net-accepted")}
        old = {"NCCL_NET_PLUGIN": plugin("net-old")}
        # 2.28.9, the oldest release checked: v8 taken, v4 (dropped before it) flagged.
        _, plugins, _, _ = probe(accepted, version="2.28.9")
        self.assertEqual((plugins["net"]["verdict"], plugins["net"]["chosen"]),
                         ("accepted", "ncclNetPlugin_v8"))
        code, plugins, doc, err = probe(old, "--require", "plugins-compatible",
                                        version="2.28.9")
        self.assertEqual((code, plugins["net"]["verdict"]), (1, "refused"))
        self.assertIn("NCCL 2.28.9 accepts none", plugins["net"]["reason"])
        self.assertIn("requirement not met: plugins-compatible", err)
        # Older than every release checked: not a guess, "unknown", naming those checked.
        for version in ("2.28.3", "2.18.5"):
            code, plugins, _, _ = probe(old, "--require", "plugins-compatible",
                                        version=version)
            self.assertEqual((code, plugins["net"]["verdict"]), (0, "unknown"), version)
            self.assertIn("2.28.9, 2.29.7, 2.30.3, 2.30.7", plugins["net"]["reason"])
        _, plugins, _, _ = probe(accepted, version="2.30.7")
        self.assertEqual(plugins["net"]["verdict"], "accepted")
        code, plugins, _, _ = probe(old, "--require", "plugins-compatible", version="2.30.7")
        self.assertEqual((code, plugins["net"]["verdict"]), (1, "refused"))

    def test_text_report(self):
        _, out, _ = run({"NCCL_NET_PLUGIN": plugin("net-old")})
        self.assertIn("refused", out)
        self.assertIn("exports: ncclNetPlugin_v4", out)


if __name__ == "__main__":
    run_tests()

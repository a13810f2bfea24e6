#!/usr/bin/env python3
"""The wheel, offline: bindings/python/build_wheel.py makes it from this build's library and
probe; it is the same bytes when built twice, its RECORD matches its files, its entries are
sorted with fixed timestamps; `pip install --no-index` puts it into a fresh venv, where
`python -m ncclshim --json` reports a fake NCCL and ncclshim.loaded() names one mapped.
   test_wheel.py PACKAGE_DIR LIBNCCLSHIM PROBE FAKE_DIR SANITIZE"""
import base64
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

from common import PACKAGE, LIBRARY, PROBE, VERSION, fake, child_env, skip_if_needed

BUILD = os.path.join(PACKAGE, "build_wheel.py")
DIST_INFO = "ncclshim-%s.dist-info/" % VERSION


def build(outdir, epoch="1700000000"):
    env = dict(os.environ, SOURCE_DATE_EPOCH=epoch)
    out = subprocess.run([sys.executable, BUILD, "--arch", platform.machine(), "--library",
                          os.path.realpath(LIBRARY), "--probe", PROBE, "--version", VERSION,
                          outdir], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


class Wheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ncclshim-wheel-")
        cls.wheel = build(os.path.join(cls.root, "a"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def test_name_and_reproducible(self):
        self.assertEqual(os.path.basename(self.wheel),
                         "ncclshim-{0}-cp38-abi3-manylinux_2_17_{1}.manylinux2014_{1}.whl"
                         .format(VERSION, platform.machine()))
        again = build(os.path.join(self.root, "b"))
        with open(self.wheel, "rb") as a, open(again, "rb") as b:
            self.assertEqual(a.read(), b.read())
        other = build(os.path.join(self.root, "c"), epoch="1700000100")
        with open(self.wheel, "rb") as a, open(other, "rb") as b:
            self.assertNotEqual(a.read(), b.read())  # the timestamps do come from the epoch

    def test_contents(self):
        with zipfile.ZipFile(self.wheel) as z:
            infos = z.infolist()
            names = [i.filename for i in infos]
            self.assertEqual(names[-1], DIST_INFO + "RECORD")
            package = [n for n in names if not n.startswith(DIST_INFO + "")]
            self.assertEqual(package, sorted(package))
            self.assertIn("ncclshim/bin/ncclshim-probe", names)
            self.assertEqual({i.date_time for i in infos}, {(2023, 11, 14, 22, 13, 20)})
            probe = z.getinfo("ncclshim/bin/ncclshim-probe")
            self.assertEqual((probe.external_attr >> 16) & 0o777, 0o755)
            wheel = z.read(DIST_INFO + "WHEEL").decode()
            self.assertIn("Root-Is-Purelib: false", wheel)
            self.assertIn("Tag: cp38-abi3-manylinux2014_%s" % platform.machine(), wheel)
            # the extension: one stable-ABI binary that links no library (not libpython)
            fast = z.getinfo("ncclshim/_fast.abi3.so")
            self.assertEqual((fast.external_attr >> 16) & 0o777, 0o755)
            path = os.path.join(self.root, "_fast.abi3.so")
            with open(path, "wb") as f:
                f.write(z.read(fast))
            dynamic = subprocess.run(["readelf", "-d", "--dyn-syms", path], check=True,
                                     capture_output=True, text=True).stdout
            self.assertNotIn("(NEEDED)", dynamic)
            self.assertIn("PyInit__fast", dynamic)
            for line in z.read(DIST_INFO + "RECORD").decode().splitlines():
                name, digest, size = line.split(",")
                if name.endswith("/RECORD"):
                    continue
                data = z.read(name)
                want = "sha256=" + base64.urlsafe_b64encode(
                    hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), (want, len(data)), name)

    def test_install_offline_and_run(self):
        venv = os.path.join(self.root, "venv")
        made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True,
                              text=True)
        if made.returncode != 0:
            self.skipTest("python3 -m venv with pip fails here (python3-venv, python3-pip "
                          "missing?): " + made.stderr.strip()[-200:])
        python = os.path.join(venv, "bin", "python")
        env = child_env()
        pip = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                              "--disable-pip-version-check", self.wheel], env=env,
                             capture_output=True, text=True)
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        run = subprocess.run([python, "-m", "ncclshim", "--json", "--no-devices"],
                             env=dict(env, NCCLSHIM_NCCL_LIBRARY=fake("2.28.9")),
                             capture_output=True, text=True, cwd=self.root)
        self.assertEqual(run.returncode, 0, run.stderr)
        doc = json.loads(run.stdout)
        self.assertEqual((doc["nccl"]["version"], doc["nccl"]["found_via"]),
                         ("2.28.9", "environment"))
        code = ("import ctypes, ncclshim\n"
                "ctypes.CDLL(%r)\n"
                "print(ncclshim.__file__, [(x.path, x.version) for x in ncclshim.loaded()])"
                % fake("2.28.3"))
        run = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                             cwd=self.root)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(run.stdout.startswith(venv), run.stdout)  # the installed package
        self.assertIn("[(%r, '2.28.3')]" % os.path.realpath(fake("2.28.3")), run.stdout)
        code = ("import sys, ncclshim\n"  # nothing loaded by the import, the extension with it
                "maps = open('/proc/self/maps').read()\n"
                "print('ncclshim._fast' in sys.modules, 'libncclshim' in maps,\n"
                "      'libnccl.so' in maps, 'ncclshim.comm' in sys.modules)\n"
                "print(ncclshim._clib.fast_module() is not None)\n")
        run = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                             cwd=self.root)
        self.assertEqual(run.stdout.split(), ["False"] * 4 + ["True"], run.stderr)
        run = subprocess.run([os.path.join(venv, "bin", "ncclshim"), "--doctor", "--json"],
                             env=env, capture_output=True, text=True)
        self.assertIn(run.returncode, (0, 1), run.stderr)
        self.assertIn("findings", json.loads(run.stdout)["doctor"])


if __name__ == "__main__":
    skip_if_needed()
    unittest.main(argv=[sys.argv[0]], verbosity=2)

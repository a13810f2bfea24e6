#!/usr/bin/env python3
"""ncclshim's communicator layer (Communicator, buffers, Watchdog) on the fakes: the generated
ctypes module against C (struct layouts from struct_layout, the lists' names and values from
libncclshim), then comm_checks.py's classes in a child interpreter, with the package from the
source tree and as the wheel installed offline into a fresh venv.
Each run twice: with the extension module (_fast) and on the pure Python path
(NCCLSHIM_PYTHON_PURE=1); comm_checks.py checks that it runs on the path it was given.
   test_comm.py PACKAGE_DIR LIBNCCLSHIM PROBE FAKE_DIR SANITIZE FUNCTIONS LAYOUT FAKE_CUDA FAST
FAST: the build's _fast.abi3.so, or '' where this build makes none (the pure path only)."""
import csv
import ctypes
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import (PACKAGE, LIBRARY, PROBE, VERSION, fake, child_env, package_env, run_python,
                    skip_if_needed)

FUNCTIONS, LAYOUT, FAKE_CUDA = map(os.path.abspath, sys.argv[6:9])
FAST = os.path.abspath(sys.argv[9]) if len(sys.argv) > 9 and sys.argv[9] else None
CHECKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "comm_checks.py")
# comm_checks.py's classes, and the fake NCCL each runs on.
RUNS = [("Forwarding Frameworks DLPack Lifecycle Watchdog Refusals Groups Agreement "
         "NoCollConfig Threads", "2.28.9"), ("CollConfigs Forwarding", "2.32.3"),
        ("Missing", "2.27.3"), ("NoNccl", None)]


def generated():
    spec = importlib.util.spec_from_file_location("generated_functions", FUNCTIONS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Generated(unittest.TestCase):
    """The module gen_functions.py wrote, against the C it came from."""

    @classmethod
    def setUpClass(cls):
        cls.f = generated()
        cls.lib = ctypes.CDLL(LIBRARY)

    def test_struct_layouts_match_c(self):
        out = subprocess.run([LAYOUT], capture_output=True, text=True, check=True).stdout
        c_fields = {}
        for line in out.splitlines():
            name, value = line.split()
            struct, _, field = name.partition(".")
            cls = self.f.STRUCTS[struct]
            if field:
                c_fields.setdefault(struct, []).append(field)
                self.assertEqual(getattr(cls, field).offset, int(value), name)
            else:
                self.assertEqual(ctypes.sizeof(cls), int(value), name)
        self.assertEqual(set(c_fields), {"ncclUniqueId", "ncclConfig_t", "ncclshim_comm_options",
                                         "ncclshim_watchdog_options", "ncclshim_team_t",
                                         "ncclshim_multimem_handle_t"})
        for struct, fields in c_fields.items():  # no field more or less than C's
            self.assertEqual([f[0] for f in self.f.STRUCTS[struct]._fields_], fields, struct)

    def test_nccl_rows_match_the_table(self):
        name, version = self.lib.ncclshim_nccl_function_name, \
            self.lib.ncclshim_nccl_function_version
        name.restype = ctypes.c_char_p
        rows = self.f.NCCL_FUNCTIONS
        self.assertEqual(len(rows), self.f.ENUMS["ncclshim_nccl_function"]
                         ["NCCLSHIM_NCCL_FUNCTION_COUNT"])
        for i, row in enumerate(rows):
            self.assertEqual((row[0], row[1]), (name(i).decode(), version(i)), i)
            self.assertEqual(len(row[5]), len(row[6]), row[0])
        all_reduce = next(r for r in rows if r[0] == "ncclAllReduce")
        self.assertEqual(all_reduce[5], (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                         ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                         ctypes.c_void_p))
        self.assertEqual(all_reduce[6], ("sendbuff", "recvbuff", "count", "datatype", "op",
                                         "comm", "stream"))

    def test_enums_match_c(self):
        for enum, fn in (("ncclshim_status", "ncclshim_status_name"),
                         ("ncclDataType_t", "ncclshim_nccl_type_name"),
                         ("ncclResult_t", "ncclshim_nccl_result_name"),
                         ("ncclshim_comm_state", "ncclshim_comm_state_name")):
            getattr(self.lib, fn).restype = ctypes.c_char_p
            values = self.f.ENUMS[enum]
            self.assertGreater(len(values), 3, enum)
            for member, value in values.items():
                text = getattr(self.lib, fn)(value).decode()
                if enum == "ncclshim_status":
                    self.assertEqual("NCCLSHIM_" + text, member)
                elif enum == "ncclshim_comm_state":
                    self.assertEqual("NCCLSHIM_COMM_" + text.upper(), member)
                elif member not in ("ncclNumTypes", "ncclNumResults"):
                    # aliases (ncclFloat for ncclFloat32) share their value with the name C gives
                    self.assertEqual(values[text], value, member)
        caps = self.lib.ncclshim_capability_name
        caps.restype = ctypes.c_char_p
        for i, (_, name, version) in enumerate(self.f.CAPABILITIES):
            self.assertEqual((caps(i).decode(), self.lib.ncclshim_capability_version(i)),
                             (name, version))

    def test_api_covers_what_the_package_calls(self):
        used = set()
        for module in ("_clib", "collconfig", "comm", "symmem", "watchdog"):
            with open(os.path.join(PACKAGE, "ncclshim", module + ".py")) as src:
                used |= set(re.findall(r"\.(ncclshim_\w+)", src.read()))  # lib_.x, f.x
        typed = set(self.f.API) | set(self.f.CALLBACKS) | set(self.f.STRUCTS)
        self.assertEqual(self.f.UNTYPED, {})  # every ncclshim function typed today
        self.assertGreater(len(used), 20)
        self.assertFalse(used - typed - {"ncclshim_comm_record_graph"}, used - typed)


class Generator(unittest.TestCase):
    """gen_functions.py on small texts: what it cannot type stops it, naming what."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, PACKAGE)
        import gen_functions
        cls.g = gen_functions

    def test_types(self):
        m = self.g.parse('typedef struct { char b[16]; int n; } id_t; typedef id_t *idp; '
                         'enum e { A = 2, B, C = 0x10u, D = A | C }; '
                         '__attribute__((visibility("default"))) const char *'
                         'ncclshim_f(idp p, id_t v, enum e x, unsigned long n, char s[]); '
                         'py_row ncclX 22803 OPTIONAL ACTION RESULT py_param const void * '
                         'py_named buf py_param size_t py_named count py_end')
        self.assertEqual(m.api, [("ncclshim_f", "_c.c_char_p",
                                  ["_c.c_void_p", "id_t", "_c.c_int", "_c.c_ulong",
                                   "_c.c_char_p"])])
        self.assertEqual(dict(m.struct_fields)["id_t"], [("b", "(_c.c_char * 16)"),
                                                         ("n", "_c.c_int")])
        self.assertEqual(m.enums["e"], {"A": 2, "B": 3, "C": 16, "D": 18})
        self.assertEqual(m.rows, [("ncclX", 22803, "OPTIONAL", "ACTION", "_c.c_int",
                                   ["_c.c_void_p", "_c.c_size_t"], ["buf", "count"])])

    def test_what_it_cannot_type(self):
        with self.assertRaisesRegex(self.g.Untyped, "row ncclY: unknown type 'mystery_t'"):
            self.g.parse("py_row ncclY 20300 REQUIRED ACTION RESULT py_param mystery_t "
                         "py_named m py_end")  # a row of the list stops it
        m = self.g.parse('__attribute__((visibility("default"))) int ncclshim_g(mystery_t m); '
                         'struct opaque; __attribute__((visibility("default"))) '
                         'int ncclshim_h(struct opaque by_value); '
                         '__attribute__((visibility("default"))) '
                         'int ncclshim_k(void (*fn)(void *), void *user); '
                         'typedef struct { mystery_t m; } skipped_t;')
        self.assertEqual(m.untyped, {"ncclshim_g": "ncclshim_g: unknown type 'mystery_t'",
                                     "ncclshim_h": "ncclshim_h: unknown type 'struct opaque'"})
        self.assertEqual(m.api, [("ncclshim_k", "_c.c_int", ["_c.c_void_p", "_c.c_void_p"])])
        self.assertNotIn("skipped_t", m.structs)  # a struct nobody needs is left out


def run_checks(python, env, packaged, fast):
    """comm_checks.py's RUNS with the extension (fast: its environment; None: none there)
    and on the pure Python path."""
    paths = [("pure", {"NCCLSHIM_PYTHON_PURE": "1"})]
    if fast is not None:
        paths.insert(0, ("fast", fast))
    for path, path_env in paths:
        for classes, variant in RUNS:
            full = dict(env, NCCLSHIM_CUDA_LIBRARY=FAKE_CUDA, COMM_CHECKS_PATH=path,
                        NCCLSHIM_NCCL_LIBRARY=fake(variant) if variant else
                        "/nonexistent/libnccl.so.2",
                        COMM_CHECKS_PACKAGED="1" if packaged else "0", **path_env)
            proc = subprocess.run([python, CHECKS] + classes.split(), env=full,
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise AssertionError("comm_checks.py %s on %s (%s path) failed:\n%s%s"
                                     % (classes, variant, path, proc.stdout, proc.stderr))
            print(proc.stderr.strip().splitlines()[-1],
                  "(%s, %s, %s)" % (classes, variant, path))


class SourceTree(unittest.TestCase):
    def test_checks(self):
        run_checks(sys.executable, package_env(NCCLSHIM_PYTHON_FUNCTIONS=FUNCTIONS), False,
                   {"NCCLSHIM_PYTHON_FAST": FAST} if FAST else None)


class LazyLayer(unittest.TestCase):
    """import ncclshim leaves the communicator layer out until its first use."""

    def test_layer_loaded_on_first_use(self):
        code = ("import sys, ncclshim\n"
                "layer = ('ncclshim.comm', 'ncclshim.buffers', 'ncclshim._clib')\n"
                "assert not [m for m in layer if m in sys.modules], sys.modules.keys()\n"
                "from ncclshim import Communicator, NcclshimError\n"
                "assert all(m in sys.modules for m in layer)\n"
                "assert ncclshim.buffers.READERS is not None and ncclshim._clib.OK == 0\n"
                "assert set(ncclshim.__all__) <= set(dir(ncclshim))\n"
                "try:\n    ncclshim.nonexistent\nexcept AttributeError as e:\n"
                "    print(e)\n")
        out = run_python(code, NCCLSHIM_PYTHON_FUNCTIONS=FUNCTIONS)
        self.assertIn("no attribute 'nonexistent'", out)


class GpuScriptDryRun(unittest.TestCase):
    """tests/gpu/python/python_gpu.py over mock torch and CuPy (gpu_mock/) on the fakes: every case
    runs its Python to the end. What only a GPU gives (results, DLPack, JAX) fails as the
    mocks make it fail; the rest, the watchdog case with it, must be ok."""
    # case -> how it fails on the mocks: the fake NCCL writes no result, the mock torch has
    # no DLPack, there is no JAX.
    MOCKED = [(re.compile(r"^(torch|cupy)-"), "result differs from the input"),
              (re.compile(r"^(graph-capture|watchdog-graph)$"), r"replay \S+ gave"),
              (re.compile(r"^dlpack$"), "__dlpack_device__"),
              (re.compile(r"^jax-all_reduce$"), "jax")]

    def run_script(self, **env):
        out = tempfile.mkdtemp(prefix="ncclshim-gpu-dryrun-")
        self.addCleanup(shutil.rmtree, out)
        here = os.path.dirname(os.path.abspath(__file__))
        gpu = os.path.join(os.path.dirname(here), "gpu", "python")
        proc = subprocess.run(
            [sys.executable, os.path.join(gpu, "python_gpu.py"), out], capture_output=True,
            text=True, timeout=240, env=package_env(
                PYTHONPATH=os.pathsep.join([os.path.join(here, "gpu_mock"), PACKAGE, gpu]),
                NCCLSHIM_PYTHON_FUNCTIONS=FUNCTIONS, NCCLSHIM_NCCL_LIBRARY=fake("2.28.9"),
                NCCLSHIM_CUDA_LIBRARY=FAKE_CUDA,
                **({"NCCLSHIM_PYTHON_FAST": FAST} if FAST else {}), **env))
        with open(os.path.join(out, "summary.csv")) as f:
            rows = list(csv.reader(f))[1:]
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)  # the mocked cases
        return {case: (verdict, detail) for case, verdict, detail in rows}, proc

    def test_every_case_runs(self):
        cases, proc = self.run_script()
        for case, (verdict, detail) in cases.items():
            mocked = [why for pattern, why in self.MOCKED if pattern.match(case)]
            if mocked:
                self.assertRegex(verdict, "^FAIL: .*" + mocked[0], case)
                continue
            if case.startswith(("percall-", "lean-")) or case == "graph-replay":  # mocks
                self.assertRegex(verdict, r"^(ok|FAIL: ratio|FAIL: replay)", case)
            elif case == "extension" and not FAST:
                self.assertRegex(verdict, "^FAIL: .*pure Python path", case)
            else:
                self.assertEqual(verdict, "ok", (case, detail, proc.stdout[-2000:]))
        self.assertIn("flag host pointer (UVA)", cases["watchdog"][1])
        self.assertIn("kernel NVRTC", cases["watchdog"][1])
        self.assertEqual(len([c for c in cases if c.startswith("percall-")]), 9)
        self.assertEqual(len([c for c in cases if c.startswith("lean-")]), 9)
        self.assertIn("cost", cases)


class InstalledWheel(unittest.TestCase):
    def test_checks(self):
        root = tempfile.mkdtemp(prefix="ncclshim-comm-wheel-")
        self.addCleanup(shutil.rmtree, root)
        wheel = subprocess.run(
            [sys.executable, os.path.join(PACKAGE, "build_wheel.py"), "--arch",
             platform.machine(), "--library", os.path.realpath(LIBRARY), "--probe", PROBE,
             "--version", VERSION, os.path.join(root, "dist")],
            capture_output=True, text=True, check=True).stdout.strip()
        venv = os.path.join(root, "venv")
        if subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True).returncode:
            self.skipTest("python3 -m venv is not available")
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "-q",
                        "--disable-pip-version-check", wheel], check=True, capture_output=True)
        run_checks(python, child_env(), True, {})  # the venv's own package and extension


if __name__ == "__main__":
    skip_if_needed()
    unittest.main(argv=[sys.argv[0], "-v"])

#!/usr/bin/env python3
"""Builds the ncclshim wheel with the standard library alone (zipfile): no pip, no backend.

    build_wheel.py --arch x86_64|aarch64 --library LIB --probe PROBE --version V
                   [--cc COMPILER] [--python-include DIR] OUTDIR

The package's generated ctypes module, ncclshim/_functions.py, is made here by
gen_functions.py from the checkout's include/ (C preprocessor: $CC, else cc), and its
extension module, ncclshim/_fast.abi3.so, from fast.c (--cc, default $CC or cc; against the
stable ABI of Python 3.8, with the headers of --python-include, default this python3's; it
links no library). The tag is cp38-abi3: one binary for CPython 3.8 and later.
PROBE goes in as ncclshim/bin/ncclshim-probe, LIB (libncclshim.so.<version>) under its SONAME
libncclshim.so.0 where the probe's RUNPATH finds it: ncclshim/lib/ for a release build
($ORIGIN/../lib), ncclshim/ for a meson build tree's probe ($ORIGIN/..; the tests'
wheel). The tag is manylinux_2_17 (manylinux2014): the binaries' glibc policy is checked by
the caller (cross/wheel.sh). Reproducible: entries sorted, every timestamp SOURCE_DATE_EPOCH
(default the fixed 1980-01-01, the oldest a zip can hold), fixed permissions and compression
level.
Prints the wheel's path."""
import argparse
import base64
import hashlib
import os
import platform
import posixpath
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["__init__.py", "__main__.py", "_native.py", "py.typed", "_args.py", "_clib.py",
           "buffers.py", "collconfig.py",
           "comm.py", "errors.py", "symmem.py", "watchdog.py"]
INCLUDE = os.path.join(HERE, "..", "..", "include")
TAG = "cp38-abi3"  # the extension's stable ABI: CPython 3.8 and later


def extension(cc, python_include, arch):
    """fast.c built as the wheel's ncclshim/_fast.abi3.so: stripped, no build path inside."""
    root = os.path.realpath(os.path.join(HERE, "..", ".."))
    with tempfile.TemporaryDirectory(prefix="ncclshim-fast-") as tmp:
        out = os.path.join(tmp, "_fast.abi3.so")
        subprocess.run(cc + ["-std=c11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                             "-Wall", "-Wextra", "-Werror", "-ffile-prefix-map=%s=." % root,
                             "-I", INCLUDE, "-I", python_include] +
                       cross_config(python_include, arch, tmp) +
                       ["-s", "-Wl,--build-id=none,-z,relro,-z,now,-z,noexecstack", "-o", out,
                        os.path.join(HERE, "fast.c")], check=True)
        with open(out, "rb") as f:
            return f.read()


def cross_config(python_include, arch, tmp):
    """For another architecture's build against Debian's python3-dev, whose pyconfig.h
    includes <ARCH-linux-gnu/python3.N/pyconfig.h> for the target: that file, pointing at
    this machine's. Both targets are LP64 Linux: the sizes and alignments the stable ABI's
    declarations depend on are the same. [] where nothing is needed."""
    version = os.path.basename(os.path.normpath(python_include))
    real = os.path.join(os.path.dirname(os.path.normpath(python_include)),
                        sysconfig.get_config_var("MULTIARCH") or "", version, "pyconfig.h")
    if arch == platform.machine() or not os.path.isfile(real):
        return []
    shim = os.path.join(tmp, "config", "%s-linux-gnu" % arch, version)
    os.makedirs(shim)
    with open(os.path.join(shim, "pyconfig.h"), "w") as f:
        f.write('#include "%s"\n' % real)
    return ["-I", os.path.join(tmp, "config")]


METADATA = """Metadata-Version: 2.1
Name: ncclshim
Version: {version}
Summary: Which NCCL this machine offers; communicators for CUDA graphs over it
License: see the project's repository
Requires-Python: >=3.8

ncclshim's Python package: ``python -m ncclshim`` (the probe, ``--explain TEXT``,
``--doctor``, ``--loaded``, ``--json``) and ``ncclshim.probe()``, ``ncclshim.loaded()``,
``ncclshim.explain()``, ``ncclshim.doctor()``; ``ncclshim.Communicator`` (checked collectives
with bounded waits, capturable in CUDA graphs), ``ncclshim.Watchdog``. Python over
libncclshim (ctypes) and the ncclshim-probe program, both inside, with the collectives' call
path in a C extension (stable ABI; pure Python where it cannot load); no dependency.
"""


def wheel_text(arch):
    return ("Wheel-Version: 1.0\nGenerator: ncclshim build_wheel.py\nRoot-Is-Purelib: false\n"
            "Tag: %s-manylinux_2_17_%s\nTag: %s-manylinux2014_%s\n" % (TAG, arch, TAG, arch))


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def library_dir(probe):
    """Where in the wheel the probe's first $ORIGIN RUNPATH entry points (readelf, or $READELF)."""
    out = subprocess.run([os.environ.get("READELF", "readelf"), "-d", probe], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", out)
    for entry in (m.group(1).split(":") if m else []):
        if entry.startswith("$ORIGIN"):
            where = posixpath.normpath("ncclshim/bin" + entry[len("$ORIGIN"):])
            if where == "ncclshim" or where.startswith("ncclshim/"):
                return where
    raise SystemExit("build_wheel.py: %s has no $ORIGIN RUNPATH inside the package" % probe)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True, choices=["x86_64", "aarch64"])
    ap.add_argument("--library", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--python-include", default=sysconfig.get_paths()["include"])
    ap.add_argument("outdir")
    a = ap.parse_args()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]  # a zip holds nothing before 1980
    dist = "ncclshim-%s.dist-info" % a.version
    files = {}  # name -> (bytes, mode)
    for name in SOURCES:
        with open(os.path.join(HERE, "ncclshim", name), "rb") as f:
            files["ncclshim/" + name] = (f.read(), 0o644)
    sys.path.insert(0, HERE)
    import gen_functions
    cc = os.environ.get("CC", "cc").split()
    files["ncclshim/_functions.py"] = (gen_functions.generate(cc, INCLUDE).encode(), 0o644)
    files["ncclshim/_fast.abi3.so"] = (extension(a.cc.split(), a.python_include, a.arch),
                                       0o755)
    for src, name in ((a.library, library_dir(a.probe) + "/libncclshim.so.0"),
                      (a.probe, "ncclshim/bin/ncclshim-probe")):
        with open(src, "rb") as f:
            files[name] = (f.read(), 0o755)
    files[dist + "/METADATA"] = (METADATA.format(version=a.version).encode(), 0o644)
    files[dist + "/WHEEL"] = (wheel_text(a.arch).encode(), 0o644)
    files[dist + "/entry_points.txt"] = (b"[console_scripts]\nncclshim = ncclshim.__main__:main\n",
                                         0o644)
    record = "".join("%s,%s,%d\n" % (n, digest(d), len(d)) for n, (d, _) in sorted(files.items()))
    record += dist + "/RECORD,,\n"
    files[dist + "/RECORD"] = (record.encode(), 0o644)
    tag = "%s-manylinux_2_17_%s.manylinux2014_%s" % (TAG, a.arch, a.arch)
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(os.path.abspath(a.outdir), "ncclshim-%s-%s.whl" % (a.version, tag))
    # Package files sorted, then the dist-info with RECORD last (as installers expect).
    order = sorted(n for n in files if not n.startswith(dist)) + \
        sorted(n for n in files if n.startswith(dist) and n != dist + "/RECORD") + \
        [dist + "/RECORD"]
    with zipfile.ZipFile(path, "w") as z:
        for name in order:
            data, mode = files[name]
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.create_system = 3  # Unix: the mode below is honoured
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=9)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Shared by the python suite's tests: the command line meson gives, skips, and running a
Python snippet with the package from the source tree on fakes.
   test_*.py PACKAGE_DIR LIBNCCLSHIM PROBE FAKE_DIR SANITIZE
with NCCLSHIM_PROJECT_VERSION (meson's project version) in the environment."""
import os
import platform
import subprocess
import sys

import support

PACKAGE, LIBRARY, PROBE, FAKE_DIR = map(os.path.abspath, sys.argv[1:5])
SANITIZE = sys.argv[5]
# meson.build's project version, the one place it is written (tests/python/meson.build)
VERSION = os.environ["NCCLSHIM_PROJECT_VERSION"]
MACHINES = {62: "x86_64", 183: "aarch64"}


def fake(variant):
    return os.path.join(FAKE_DIR, "libfake-nccl-%s.so" % variant)


def skip_reason():
    """Why this build's library cannot be loaded by this python3, or None."""
    if SANITIZE not in ("", "none"):
        return "a sanitizer build (%s): its runtime must come first in the process" % SANITIZE
    with open(LIBRARY, "rb") as f:
        head = f.read(20)
    machine = MACHINES.get(int.from_bytes(head[18:20], "little"))
    if machine != platform.machine():
        return "the library is for %s, this python3 for %s" % (machine, platform.machine())
    return None


def skip_if_needed():
    reason = skip_reason()
    if reason:
        print("skipped: " + reason)
        sys.exit(77)


def child_env(**extra):
    """A child's environment: nothing of the caller's settings (tests/support/support.py), no ld.so
    cache for ncclshim's search, no home directory; then `extra`."""
    return support.clean_env(**{"NCCLSHIM_LD_CACHE": "/dev/null", "HOME": "/nonexistent",
                                **extra})


def package_env(**extra):
    """child_env for the source tree's package with this build's library and probe."""
    return child_env(**{"PYTHONPATH": PACKAGE, "NCCLSHIM_PYTHON_LIBRARY": LIBRARY,
                        "NCCLSHIM_PYTHON_PROBE": PROBE, **extra})


def run_python(code, python=sys.executable, **env):
    """Runs code with the source tree's package and this build's library and probe."""
    full = package_env(**env)
    proc = subprocess.run([python, "-c", code], env=full, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("python failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout,
                                                              proc.stderr))
    return proc.stdout

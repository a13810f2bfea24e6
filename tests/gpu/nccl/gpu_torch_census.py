#!/usr/bin/env python3
"""The loader's truth on the GPU host: ncclshim in a process where PyTorch already mapped its NCCL.

   gpu_torch_census.py LIBNCCLSHIM            the test (meson suite 'gpu'); 77 without torch
   gpu_torch_census.py LIBNCCLSHIM --list     every NCCL visible, as ncclshim lists it

The test runs, in the Python that has torch (TORCH_PYTHON, default /opt/torch/.venv/bin/python3):
`import torch` (which maps the wheel's libnccl.so.2), then libncclshim through ctypes:
  1. the default handle reuses the wheel's NCCL (already-loaded), one NCCL in the census;
  2. an explicit open of the system NCCL (SYSTEM_NCCL, default
     /usr/lib/x86_64-linux-gnu/libnccl.so.2) with refuse_second_copy is refused with
     SECOND_COPY and leaves it unmapped;
  3. the same open without the flag maps it, with a warning, and the census counts two.
TRUTH_PRELOAD=FILE replaces `import torch` by loading FILE (to try the test without torch).
Nothing here creates a communicator or touches a GPU."""
import ctypes
import os
import subprocess
import sys

SKIP = 77
OK, SECOND_COPY = 0, 17
VIA_PRELOADED = 3
# ncclshim's variables that change the search, the census or the message; cleared for the
# child (NCCLSHIM_NCCL_LIBRARY would replace the default search this test checks).
UNCONTROLLED = ("NCCLSHIM_NCCL_LIBRARY", "NCCLSHIM_REFUSE_SECOND_NCCL", "NCCLSHIM_LD_CACHE",
                "NCCLSHIM_CUDA_LIBRARY", "NCCLSHIM_DEBUG", "LD_PRELOAD")


class Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("path", ctypes.c_char_p),
                ("min_version", ctypes.c_int), ("refuse_second_copy", ctypes.c_int)]


class Entry(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("version", ctypes.c_int), ("how", ctypes.c_int),
                ("mapped", ctypes.c_int), ("in_program", ctypes.c_int), ("chosen", ctypes.c_int)]


def bind(path):
    lib = ctypes.CDLL(path)
    p = ctypes.c_void_p
    for name, res, args in [
            ("ncclshim_nccl_default", p, []),
            ("ncclshim_nccl_open", ctypes.c_int, [ctypes.POINTER(Options), ctypes.POINTER(p)]),
            ("ncclshim_nccl_status", ctypes.c_int, [p]),
            ("ncclshim_nccl_message", ctypes.c_char_p, [p]),
            ("ncclshim_nccl_path", ctypes.c_char_p, [p]),
            ("ncclshim_nccl_version", ctypes.c_int, [p]),
            ("ncclshim_nccl_found_via", ctypes.c_int, [p]),
            ("ncclshim_found_via_name", ctypes.c_char_p, [ctypes.c_int]),
            ("ncclshim_status_name", ctypes.c_char_p, [ctypes.c_int]),
            ("ncclshim_nccl_census_count", ctypes.c_size_t, [p]),
            ("ncclshim_nccl_census_entry", ctypes.POINTER(Entry), [p, ctypes.c_size_t]),
            ("ncclshim_nccl_list_visible", ctypes.c_int, [p, ctypes.POINTER(p)]),
            ("ncclshim_nccl_list_count", ctypes.c_size_t, [p]),
            ("ncclshim_nccl_list_entry", ctypes.POINTER(Entry), [p, ctypes.c_size_t]),
            ("ncclshim_nccl_list_free", None, [p])]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def describe(lib, h):
    s = lib.ncclshim_nccl_status(h)
    return "%s via %s: %s" % (lib.ncclshim_status_name(s).decode(),
                              lib.ncclshim_found_via_name(lib.ncclshim_nccl_found_via(h)).decode(),
                              lib.ncclshim_nccl_message(h).decode(errors="replace"))


def census(lib, h):
    return [lib.ncclshim_nccl_census_entry(h, i).contents
            for i in range(lib.ncclshim_nccl_census_count(h))]


def mapped_files():
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if "/" in line}


def open_explicit(lib, path, refuse):
    opts = Options(ctypes.sizeof(Options), path.encode(), 0, 1 if refuse else 0)
    h = ctypes.c_void_p()
    lib.ncclshim_nccl_open(ctypes.byref(opts), ctypes.byref(h))
    return h


def list_visible(lib):
    chosen = lib.ncclshim_nccl_default()
    print("default:", describe(lib, chosen))
    out = ctypes.c_void_p()
    if lib.ncclshim_nccl_list_visible(chosen, ctypes.byref(out)) != OK:
        print("list failed")
        return 1
    for i in range(lib.ncclshim_nccl_list_count(out)):
        e = lib.ncclshim_nccl_list_entry(out, i).contents
        print("  %s %-8s %-18s %s%s" % ("*" if e.chosen else " ", e.version,
                                        lib.ncclshim_found_via_name(e.how).decode(),
                                        e.path.decode(errors="replace"),
                                        " (mapped)" if e.mapped else ""))
    lib.ncclshim_nccl_list_free(out)
    return 0


def child(libpath):
    preload = os.environ.get("TRUTH_PRELOAD")
    if preload:
        ctypes.CDLL(preload)
        print("preloaded", preload)
    else:
        import torch  # noqa: F401  (maps the wheel's libnccl.so.2)
        print("torch", torch.__version__, "cuda", torch.version.cuda)
    lib = bind(libpath)
    failures = 0

    def check(ok, what):
        nonlocal failures
        print("%s: %s" % ("PASS" if ok else "FAIL", what))
        failures += 0 if ok else 1

    d = lib.ncclshim_nccl_default()
    print("default:", describe(lib, d))
    wheel = (lib.ncclshim_nccl_path(d) or b"").decode()
    check(lib.ncclshim_nccl_status(d) == OK, "the default handle loaded an NCCL")
    check(lib.ncclshim_nccl_found_via(d) == VIA_PRELOADED,
          "it reused the NCCL already mapped (%s)" % wheel)
    check(len(census(lib, d)) == 1, "one NCCL in the process: %s" %
          [(e.version, e.path.decode()) for e in census(lib, d)])

    system = os.environ.get("SYSTEM_NCCL", "/usr/lib/x86_64-linux-gnu/libnccl.so.2")
    real = os.path.realpath(system)
    if not os.path.exists(system) or real == os.path.realpath(wheel):
        print("no second NCCL at %s: steps 2 and 3 skipped" % system)
        return 1 if failures else 0
    h = open_explicit(lib, system, refuse=True)
    print("refused:", describe(lib, h))
    check(lib.ncclshim_nccl_status(h) == SECOND_COPY, "the system NCCL was refused (SECOND_COPY)")
    check(real not in mapped_files(), "and not mapped")
    h = open_explicit(lib, system, refuse=False)
    print("warned:", describe(lib, h))
    check(lib.ncclshim_nccl_status(h) == OK, "without the flag it was mapped")
    check(len(census(lib, h)) == 2, "and the census counts two NCCLs")
    check(b"WARNING: 2 NCCLs" in lib.ncclshim_nccl_message(h), "with a warning in the message")
    return 1 if failures else 0


def main():
    libpath = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "--list":
        return list_visible(bind(libpath))
    if len(sys.argv) > 2 and sys.argv[2] == "--child":
        return child(libpath)
    python = os.environ.get("TORCH_PYTHON", "/opt/torch/.venv/bin/python3")
    if not os.environ.get("TRUTH_PRELOAD"):
        if not os.access(python, os.X_OK):
            print("skipped: no %s (set TORCH_PYTHON)" % python)
            return SKIP
        if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode:
            print("skipped: %s cannot import torch" % python)
            return SKIP
    else:
        python = sys.executable
    # The test's own environment: what it asserts (the default search reusing the mapped
    # NCCL, the census) must not be steered by ncclshim settings of the caller's shell.
    env = {k: v for k, v in os.environ.items() if k not in UNCONTROLLED}
    env["NCCL_NVLS_ENABLE"] = "0"
    return subprocess.run([python, __file__, libpath, "--child"], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())

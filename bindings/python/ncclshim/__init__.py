"""ncclshim for Python: which NCCL this machine offers and which one this interpreter has.

    ncclshim.loaded()   the NCCLs mapped in this interpreter now (nothing is loaded)
    ncclshim.probe()    what ncclshim finds, as a fresh program of this environment sees it
    ncclshim.explain(t) what an NCCL error text means here (a dict, the probe's JSON)
    ncclshim.doctor()   every NCCL here and each problem with what to do (a dict)

Pure Python over libncclshim (ctypes) and its ncclshim-probe program, both in the wheel.
``python -m ncclshim --help`` has the command line.
"""
import ctypes
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import List, Optional

from . import _native

__all__ = ["Library", "Probe", "loaded", "probe", "explain", "doctor", "run_probe"]
__version__ = "0.1.0"


@dataclass(frozen=True)
class Library:
    """One NCCL file."""
    path: str
    version: Optional[str]          # "2.28.9"; None when unknown
    found_via: Optional[str] = None  # the search step ("ld-cache", ...); None for a mapping
    mapped: bool = False            # mapped in the process described
    in_program: bool = False        # linked into the executable itself
    chosen: bool = False            # the one ncclshim's search takes


@dataclass(frozen=True)
class Probe:
    """ncclshim-probe's report (``ncclshim-probe --json``; docs/reference.md has the keys)."""
    found: bool
    status: str
    message: str
    path: Optional[str]
    version: Optional[str]
    found_via: str
    build: str
    capabilities: List[str]
    visible: List[Library]
    fingerprint: str
    driver_version: Optional[str]
    raw: dict = field(repr=False, compare=False)


def _maps_nccl_paths():
    """Files named libnccl* mapped in this process, from /proc/self/maps, in first-seen order;
    NCCL's plugins (libnccl-net.so, libnccl-tuner-*.so, ...: a dash after "libnccl") and
    ncclshim's own libraries left out."""
    paths = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6 or not parts[5].startswith("/"):
                    continue
                path = parts[5].rstrip("\n")
                if path.endswith(" (deleted)"):
                    path = path[:-len(" (deleted)")]
                base = os.path.basename(path)
                if base.startswith("libnccl") and not base.startswith(("libncclshim", "libnccl-")) \
                        and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    return paths


def loaded() -> List[Library]:
    """The NCCLs mapped in this interpreter now, without loading any: the census of
    libncclshim (every mapped object defining the function ncclGetVersion, whatever its
    name, with the version it reports), then any other file named libnccl* that
    /proc/self/maps shows. More than one is trouble: each has its own communicators."""
    lib = _native.lib()
    handle = ctypes.c_void_p()
    if lib.ncclshim_nccl_list_visible(None, ctypes.byref(handle)) != 0:
        raise OSError("ncclshim_nccl_list_visible: %s" % lib.ncclshim_last_error().decode())
    found = []
    try:
        for i in range(lib.ncclshim_nccl_list_count(handle)):
            e = lib.ncclshim_nccl_list_entry(handle, i).contents
            if not e.mapped:
                continue
            found.append(Library(path=os.fsdecode(e.path),
                                 version=_native.format_version(e.version),
                                 mapped=True, in_program=bool(e.in_program)))
    finally:
        lib.ncclshim_nccl_list_free(handle)
    known = {os.path.realpath(x.path) for x in found}
    for path in _maps_nccl_paths():
        if os.path.realpath(path) not in known:
            found.append(Library(path=path, version=None, mapped=True))
    return found


def run_probe(*args: str, python_env: bool = True) -> subprocess.CompletedProcess:
    """Runs the bundled ncclshim-probe with args (text output captured) as a program of this
    interpreter's environment: started under the interpreter's name (argv[0] is
    sys.executable, so the search sees the interpreter's prefix, venv or not); in a venv that
    is not activated, VIRTUAL_ENV is set for it (the probe lives in site-packages, where no
    search step would find the venv); --doctor and --explain get --python sys.prefix.
    python_env=False runs it as it is."""
    for arg in args:
        if "\0" in arg:
            raise ValueError("an argument for ncclshim-probe holds a NUL byte, which no "
                             "command line can carry")
    argv = [_native.probe_path(), *args]
    env = None
    if python_env:
        if "--doctor" in args or "--explain" in args:
            argv += ["--python", sys.prefix]
        if sys.prefix != getattr(sys, "base_prefix", sys.prefix) and \
                not os.environ.get("VIRTUAL_ENV"):
            env = dict(os.environ, VIRTUAL_ENV=sys.prefix)
    # Started as this interpreter (argv[0]), so that the search's "prefix of the program as
    # started" is the interpreter's own, as it is for ncclshim_init inside it: a non-venv
    # Python's wheels (/usr/local/lib/python3.N/dist-packages) are found as they would be.
    executable = argv[0]
    if python_env and sys.executable:
        argv[0] = sys.executable
    try:
        return subprocess.run(argv, executable=executable, capture_output=True, text=True,
                              env=env)
    except OSError as e:  # E2BIG: a text longer than the system lets a command line be
        raise _native.ProbeUnavailable("cannot start %s: %s" % (executable, e.strerror or e)) \
            from None


def _json(*args: str) -> dict:
    proc = run_probe("--json", *args)
    if proc.returncode == 2 or not proc.stdout.strip():
        raise RuntimeError("ncclshim-probe %s failed (exit %d): %s"
                           % (" ".join(args), proc.returncode, proc.stderr.strip()))
    return json.loads(proc.stdout)


def probe(devices: bool = False) -> Probe:
    """What ncclshim finds for a program of this interpreter's environment (run_probe): the
    probe runs in its own process, so nothing is loaded into this interpreter. devices=True
    also queries the GPUs (cuInit, in the probe's process)."""
    doc = _json() if devices else _json("--no-devices")
    n = doc["nccl"]
    visible = [Library(path=v["path"], version=v["version"], found_via=v.get("found_via"),
                       mapped=v["mapped"], in_program=v["in_program"], chosen=v["chosen"])
               for v in n.get("visible", [])]
    return Probe(found=n["found"], status=n["status"], message=n["message"], path=n["path"],
                 version=n["version"], found_via=n["found_via"], build=n["build"],
                 capabilities=list(n["capabilities"]), visible=visible,
                 fingerprint=doc["fingerprint"], driver_version=doc["cuda"]["driver_version"],
                 raw=doc)


def explain(text: str) -> dict:
    """``ncclshim-probe --explain TEXT --json``'s "explain" object."""
    return _json("--explain", text)["explain"]


def doctor() -> dict:
    """``ncclshim-probe --doctor --json``'s "doctor" object; "problems" 0 means nothing wrong."""
    return _json("--doctor")["doctor"]


# ---- Communicators for Python engines (comm.py, buffers.py, watchdog.py, symmem.py) ----
# Loaded on first use (PEP 562's module __getattr__): `import ncclshim` costs only what the
# probe's functions above need (docs/python.md, "Import time", has the numbers).
_LAZY = {"Buffer": "buffers", "dtype_code": "buffers", "Communicator": "comm", "group": "comm",
         "unique_id": "comm", "NcclshimError": "errors", "NcclTimeout": "errors",
         "NcclUnavailable": "errors", "SymmetricBuffer": "symmem", "Watchdog": "watchdog",
         "CollConfig": "collconfig", "set_encryption": "collconfig"}
_SUBMODULES = {"_clib", "buffers", "collconfig", "comm", "errors", "symmem", "watchdog"}


def __getattr__(name):
    if name not in _LAZY and name not in _SUBMODULES:
        raise AttributeError("module 'ncclshim' has no attribute %r" % name)
    import importlib
    module = importlib.import_module("." + _LAZY.get(name, name), __name__)
    value = getattr(module, name) if name in _LAZY else module
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ += list(_LAZY)

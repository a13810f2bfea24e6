"""Where this package's native parts are, and libncclshim through ctypes.

In the wheel, ``lib/libncclshim.so.0`` (or ``libncclshim.so.0``, in a wheel made from a
meson build tree) and ``bin/ncclshim-probe`` lie beside this file. A source tree (tests)
names them with NCCLSHIM_PYTHON_LIBRARY and NCCLSHIM_PYTHON_PROBE.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """The libncclshim file this package uses."""
    given = os.environ.get("NCCLSHIM_PYTHON_LIBRARY")
    if given:
        return given
    for bundled in (os.path.join(_HERE, "lib", "libncclshim.so.0"),
                    os.path.join(_HERE, "libncclshim.so.0")):
        if os.path.exists(bundled):
            return bundled
    return "libncclshim.so.0"


class ProbeUnavailable(OSError):
    """The probe this package runs is missing or cannot be started: an environment problem,
    said in one line, never a traceback."""


def probe_path():
    """The ncclshim-probe program this package runs: the one NCCLSHIM_PYTHON_PROBE names, else
    the one bundled beside this file. Never another ncclshim-probe found on PATH, which may be
    another release (or anything called that)."""
    given = os.environ.get("NCCLSHIM_PYTHON_PROBE")
    path = given or os.path.join(_HERE, "bin", "ncclshim-probe")
    where = "NCCLSHIM_PYTHON_PROBE names" if given else "the package's bundled probe is"
    if not os.path.isfile(path):
        raise ProbeUnavailable("%s %s, which does not exist (reinstall the ncclshim wheel)"
                               % (where, path))
    if not os.access(path, os.X_OK):
        raise ProbeUnavailable("%s %s, which is not executable (reinstall the ncclshim wheel, "
                               "or chmod +x it)" % (where, path))
    return path


class Entry(ctypes.Structure):
    """ncclshim_nccl_entry (include/ncclshim/diag.h)."""
    _fields_ = [("path", ctypes.c_char_p), ("version", ctypes.c_int), ("how", ctypes.c_int),
                ("mapped", ctypes.c_int), ("in_program", ctypes.c_int), ("chosen", ctypes.c_int)]


_lib = None


def lib():
    """libncclshim, loaded once (RTLD_LOCAL: its names stay out of the process's scope)."""
    global _lib
    if _lib is None:
        handle = ctypes.CDLL(library_path(), mode=os.RTLD_LOCAL)
        handle.ncclshim_nccl_list_visible.argtypes = [ctypes.c_void_p,
                                                      ctypes.POINTER(ctypes.c_void_p)]
        handle.ncclshim_nccl_list_visible.restype = ctypes.c_int
        handle.ncclshim_nccl_list_count.argtypes = [ctypes.c_void_p]
        handle.ncclshim_nccl_list_count.restype = ctypes.c_size_t
        handle.ncclshim_nccl_list_entry.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        handle.ncclshim_nccl_list_entry.restype = ctypes.POINTER(Entry)
        handle.ncclshim_nccl_list_free.argtypes = [ctypes.c_void_p]
        handle.ncclshim_nccl_list_free.restype = None
        handle.ncclshim_format_version.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        handle.ncclshim_format_version.restype = ctypes.c_char_p
        handle.ncclshim_found_via_name.argtypes = [ctypes.c_int]
        handle.ncclshim_found_via_name.restype = ctypes.c_char_p
        handle.ncclshim_last_error.argtypes = []
        handle.ncclshim_last_error.restype = ctypes.c_char_p
        handle.ncclshim_library_version.argtypes = []
        handle.ncclshim_library_version.restype = ctypes.c_char_p
        _lib = handle
    return _lib


def format_version(packed):
    """'2.28.9' for 22809; None for 0."""
    if packed <= 0:
        return None
    buf = ctypes.create_string_buffer(16)
    return lib().ncclshim_format_version(packed, buf, len(buf)).decode()

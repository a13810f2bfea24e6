"""libncclshim for the communicator layer: ncclshim's functions typed from the generated
module, the NCCL table's entries by name, and failures turned into exceptions.

The generated module (_functions.py) lies in the package of a wheel; a source tree names the
build's copy with NCCLSHIM_PYTHON_FUNCTIONS (meson writes it as
build/bindings/python/_functions.py). Nothing here runs at import: the first use loads."""
import ctypes
import importlib.machinery
import importlib.util
import os
import sys

from . import _args, _native
from .errors import NcclshimError, NcclTimeout, NcclUnavailable

OK, INVALID_ARGUMENT, UNAVAILABLE, NCCL_ERROR, TIMEOUT = 0, 8, 10, 14, 15
_state = {}


class Owner:
    """Base of the objects that own a libncclshim handle and free it once (Communicator,
    SymmetricBuffer, Watchdog): a copy would free it a second time, and a pickle would carry
    its address into another process, so both are refused."""
    __slots__ = ()

    def __reduce_ex__(self, protocol):
        raise TypeError("a %s owns a libncclshim handle, which it frees once: it cannot be "
                        "copied or pickled (pass the object itself)" % type(self).__name__)

    def __copy__(self):
        return self.__reduce_ex__(0)

    def __deepcopy__(self, memo):
        return self.__reduce_ex__(0)


def functions():
    """The generated module (ncclshim._functions)."""
    mod = _state.get("functions")
    if mod is None:
        try:
            from . import _functions as mod
        except ImportError:
            path = os.environ.get("NCCLSHIM_PYTHON_FUNCTIONS")
            if not path:
                raise ImportError(
                    "ncclshim/_functions.py is generated at build time and is missing: in a "
                    "source tree set NCCLSHIM_PYTHON_FUNCTIONS to the build's "
                    "bindings/python/_functions.py") from None
            spec = importlib.util.spec_from_file_location("ncclshim._functions", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules["ncclshim._functions"] = mod
        _state["functions"] = mod
    return mod


def lib():
    """libncclshim with every ncclshim function typed (its own CDLL object: _native's
    declarations stay as they are)."""
    handle = _state.get("lib")
    if handle is None:
        handle = ctypes.CDLL(_native.library_path(), mode=os.RTLD_LOCAL)
        for name, (restype, argtypes) in functions().API.items():
            fn = getattr(handle, name, None)
            if fn is not None:  # an older library may lack a newer header's function
                fn.restype = restype
                fn.argtypes = argtypes
        _state["lib"] = handle
    return handle


def has(name):
    """Whether this libncclshim has ncclshim function `name` (and it is typed)."""
    return name in functions().API and hasattr(lib(), name)


def nccl():
    """The default NCCL handle (ncclshim_nccl_default()), loading NCCL on first use."""
    h = _state.get("nccl")
    if h is None:
        h = lib().ncclshim_nccl_default()
        _state["nccl"] = h
    return h


def version_text(packed):
    return "%d.%d.%d" % (packed // 10000, packed // 100 % 100, packed % 100)


def loaded_text():
    lib_ = lib()
    h = nccl()
    path = lib_.ncclshim_nccl_path(h)
    return "NCCL %s (%s)" % (version_text(lib_.ncclshim_nccl_version(h)),
                             os.fsdecode(path) if path else "?")


def require_nccl():
    """Raises NcclUnavailable when no NCCL was loaded."""
    lib_ = lib()
    if lib_.ncclshim_nccl_status(nccl()) != OK:
        raise NcclUnavailable("no NCCL: " + lib_.ncclshim_nccl_message(nccl()).decode(
            errors="replace"), call="ncclshim_nccl_default",
            status=lib_.ncclshim_nccl_status(nccl()),
            status_name=lib_.ncclshim_status_name(lib_.ncclshim_nccl_status(nccl())).decode())


def nccl_function(name):
    """The NCCL table's entry `name` as a ctypes function (typed from its row), for the
    loaded NCCL. Raises NcclUnavailable at once when the library lacks it, naming the
    release that brought it."""
    cache = _state.setdefault("table", {})
    fn = cache.get(name)
    if fn is not None:
        return fn
    require_nccl()
    rows = functions().NCCL_FUNCTIONS
    index = next((i for i, r in enumerate(rows) if r[0] == name), None)
    if index is None:
        raise KeyError("%s is not in ncclshim's NCCL function list" % name)
    lib_ = lib()
    if not lib_.ncclshim_nccl_has_function(nccl(), index):
        row = rows[index]
        raise NcclUnavailable("%s came with NCCL %s; the loaded %s lacks it"
                              % (name, version_text(row[1]), loaded_text()), call=name,
                              status=UNAVAILABLE, status_name="UNAVAILABLE")
    entries = ctypes.cast(lib_.ncclshim_nccl_functions(nccl()),
                          ctypes.POINTER(ctypes.c_void_p * len(rows))).contents
    _, _, _, _, restype, argtypes, _ = rows[index]
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(entries[index])
    cache[name] = fn
    return fn


def error(status, call, raw_comm=None):
    """The exception for a failed ncclshim call: its message, and NCCL's code, text and
    last error when the failure was NCCL's."""
    lib_ = lib()
    message = lib_.ncclshim_last_error().decode(errors="replace")
    kw = dict(call=call, status=status,
              status_name=lib_.ncclshim_status_name(status).decode())
    if status == NCCL_ERROR:
        code = lib_.ncclshim_last_nccl_result()
        if code:
            kw.update(nccl_result=code, nccl_name=lib_.ncclshim_nccl_result_name(code).decode(),
                      nccl_text=lib_.ncclshim_nccl_result_string(code).decode())
        try:
            text = nccl_function("ncclGetLastError")(raw_comm)
            kw["last_error"] = text.decode(errors="replace") if text else ""
        except NcclshimError:
            pass
    cls = NcclTimeout if status == TIMEOUT else \
        NcclUnavailable if status == UNAVAILABLE else NcclshimError
    return cls(message or "%s failed: %s" % (call, kw["status_name"]), **kw)


def check(status, call, raw_comm=None):
    if status != OK:
        raise error(status, call, raw_comm)


def fast_module():
    """The package's extension module (_fast: the collectives' call path in C, against the
    stable ABI), or None where it cannot load: not built (a source tree names the build's
    with NCCLSHIM_PYTHON_FAST), another interpreter, or NCCLSHIM_PYTHON_PURE=1."""
    if "fast" not in _state:
        mod = None
        if os.environ.get("NCCLSHIM_PYTHON_PURE") != "1":
            try:
                from . import _fast as mod
            except ImportError:
                path = os.environ.get("NCCLSHIM_PYTHON_FAST")
                if path:
                    try:
                        loader = importlib.machinery.ExtensionFileLoader("ncclshim._fast",
                                                                         path)
                        spec = importlib.util.spec_from_file_location("ncclshim._fast", path,
                                                                      loader=loader)
                        mod = importlib.util.module_from_spec(spec)
                        loader.exec_module(mod)
                        sys.modules["ncclshim._fast"] = mod
                    except (ImportError, OSError):
                        mod = None
        _state["fast"] = mod
    return _state["fast"]


def fast_calls(fallback, ops):
    """The extension's Calls type, its fast path handing every other call to `fallback`'s
    methods (comm._PyCalls), reading the reductions seen in `ops`; None without the
    extension."""
    mod = fast_module()
    if mod is None:
        return None
    from . import buffers
    mod.setup(fallback, buffers.TORCH_CODES, ops, buffers.STREAM_ATTRS, buffers.current)
    return mod.Calls


def bind_fast():
    """Hands the extension the loaded NCCL's function table (once NCCL is loaded)."""
    mod = fast_module()
    if mod is not None and not _state.get("fast_bound"):
        mod.bind(lib().ncclshim_nccl_functions(nccl()))
        _state["fast_bound"] = True


def milliseconds(seconds, name="timeout"):
    """A timeout in seconds as the C side's int milliseconds (_args.milliseconds)."""
    return _args.milliseconds(seconds, name)

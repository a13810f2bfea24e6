"""Buffers and streams as Python engines hold them, reduced to what NCCL takes: a device
pointer, an element count, an ncclDataType_t, and a stream handle.

    buffer(obj) -> (ptr, count, dtype, framework)
        obj: a torch tensor, a CuPy array, any object with __cuda_array_interface__ (JAX,
        Numba, ...) or __dlpack__ (device CUDA), or a Buffer(ptr, count, dtype).
        Host memory is refused (BufferError naming what was passed), so are non-contiguous
        arrays and dtypes NCCL has no type for.
    stream(s, framework) -> int
        s: None (the current stream of the buffer's framework: torch's or CuPy's current
        stream, else 0, the legacy default stream), an int handle, a torch stream
        (.cuda_stream) or a CuPy stream (.ptr).
    dtype_code(d) -> int
        d: an ncclDataType_t int, a name ("float32", "bfloat16", "half", "ncclFloat32"), a
        torch dtype, a NumPy or CuPy dtype or scalar type.

torch and CuPy are never imported here: an object is recognised as theirs by its type, and
each type's reader (and pair reader, for a call's two buffers) is found once and cached
(READERS, PAIRS), so that the call path allocates no device memory, synchronizes nothing
and copies nothing (it is captured in CUDA graphs). Only
__dlpack__ makes a (host) capsule per call; the other readers make none."""
import ctypes
import operator
import sys

from ._clib import functions

# NumPy/torch/CuPy names and typestr ("<f4") to NCCL's type names (the values come from the
# generated ENUMS["ncclDataType_t"]).
_NAMES = {
    "int8": "ncclInt8", "char": "ncclInt8", "uint8": "ncclUint8", "int32": "ncclInt32",
    "int": "ncclInt32", "uint32": "ncclUint32", "int64": "ncclInt64", "long": "ncclInt64",
    "uint64": "ncclUint64", "float16": "ncclFloat16", "half": "ncclFloat16",
    "float32": "ncclFloat32", "float": "ncclFloat32", "float64": "ncclFloat64",
    "double": "ncclFloat64", "bfloat16": "ncclBfloat16", "float8_e4m3fn": "ncclFloat8e4m3",
    "float8_e4m3": "ncclFloat8e4m3", "float8_e5m2": "ncclFloat8e5m2", "bool": "ncclUint8",
}
_TYPESTR = {"i1": "int8", "u1": "uint8", "b1": "uint8", "i4": "int32", "u4": "uint32",
            "i8": "int64", "u8": "uint64", "f2": "float16", "f4": "float32", "f8": "float64"}
# DLPack's (type code, bits): 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_DLPACK = {(0, 8): "int8", (1, 8): "uint8", (0, 32): "int32", (1, 32): "uint32",
           (0, 64): "int64", (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32",
           (2, 64): "float64", (4, 16): "bfloat16", (6, 8): "uint8"}
_SIZES = {}  # ncclDataType_t -> element size in bytes
_codes = {}


def _table():
    if not _codes:
        enum = functions().ENUMS["ncclDataType_t"]
        for k, v in enum.items():
            if k != "ncclNumTypes":
                _codes[k] = v
                _codes[k[4:].lower()] = v
        for name, nccl in _NAMES.items():
            _codes[name] = enum[nccl]
        for nccl, size in (("ncclInt8", 1), ("ncclUint8", 1), ("ncclInt32", 4),
                           ("ncclUint32", 4), ("ncclInt64", 8), ("ncclUint64", 8),
                           ("ncclFloat16", 2), ("ncclFloat32", 4), ("ncclFloat64", 8),
                           ("ncclBfloat16", 2), ("ncclFloat8e4m3", 1), ("ncclFloat8e5m2", 1)):
            _SIZES[enum[nccl]] = size
    return _codes


def dtype_code(d):
    """NCCL's ncclDataType_t for d (see the module's doc); TypeError for one it lacks."""
    codes = _table()
    if isinstance(d, int) and not isinstance(d, bool):
        if d not in _SIZES:
            raise TypeError("%d is not an ncclDataType_t" % d)
        return d
    name = d if isinstance(d, str) else getattr(d, "name", None) or \
        getattr(d, "__name__", None) or str(d)
    name = str(name)
    if name.startswith("torch."):
        name = name[len("torch."):]
    code = codes.get(name)
    if code is None:
        code = codes.get(name.lower())
    if code is None:
        raise TypeError("NCCL has no data type for %r" % (d,))
    return code


def element_size(code):
    _table()
    return _SIZES[code]


class Buffer:
    """Device memory given as a pointer, an element count and a dtype (any dtype_code
    spelling). NCCL is given the pointer as it is: it must be device memory of the
    communicator's GPU (or memory NCCL can reach)."""
    __slots__ = ("ptr", "count", "dtype")

    def __init__(self, ptr, count, dtype):
        if not isinstance(ptr, int) or ptr < 0:
            raise TypeError("Buffer: ptr must be a device address (int)")
        if not isinstance(count, int) or count < 0:
            raise TypeError("Buffer: count must be an int >= 0")
        self.ptr, self.count, self.dtype = ptr, count, dtype_code(dtype)

    def __repr__(self):
        return "Buffer(ptr=0x%x, count=%d, dtype=%d)" % (self.ptr, self.count, self.dtype)


def _host(obj, where):
    return BufferError("%s is in host memory (%s): NCCL needs device memory; move it to the "
                       "GPU first" % (type(obj).__name__, where))


# ---- readers, one per type (found once, cached in READERS) ------------------------------

def _read_buffer(b):
    return b.ptr, b.count, b.dtype, None


class _Codes(dict):
    """A framework's dtype objects to NCCL codes, each found once (dtype_code of its name)."""

    def __missing__(self, d):
        code = self[d] = dtype_code(d)
        return code


TORCH_CODES = _Codes()  # torch dtype -> NCCL code; comm.py's inline fast path reads it


def _read_torch(t):
    if not t.is_cuda:
        raise _host(t, "torch device %s" % t.device)
    if not t.is_contiguous():
        raise BufferError("torch tensor is not contiguous: NCCL reads it as one block; pass "
                          "t.contiguous()")
    return t.data_ptr(), t.numel(), TORCH_CODES[t.dtype], "torch"


_cupy_codes = _Codes()


def _read_cupy(a):
    if not a.flags.c_contiguous:  # a new Flags object per call: _read_cupy_flag where it can
        raise BufferError("CuPy array is not C-contiguous: pass cupy.ascontiguousarray(a)")
    return a.data.ptr, a.size, _cupy_codes[a.dtype], "cupy"


def _read_cupy_flag(a):
    if not a._c_contiguous:  # what a.flags.c_contiguous reads
        return _read_cupy(a)
    return a.data.ptr, a.size, _cupy_codes[a.dtype], "cupy"


# ---- pairs: a call's two buffers at once, one Python frame for both -------------------
# pair(a, b, scale, what) -> (a's ptr, b's ptr, a's count, dtype, framework): b must be of
# a's dtype and hold scale x a's count elements; `what` names b in the errors.

def _pair_any(a, b, scale, what):
    ap, n, dt, fw = buffer(a)
    if b is None:
        raise TypeError("%s buffer missing" % what)
    bp, bn, bd, _ = buffer(b)
    if bd != dt:
        raise TypeError("%s has NCCL type %d; this call needs %d (the other buffer's)"
                        % (what, bd, dt))
    if bn != n * scale:
        raise ValueError("%s has %d elements; this call needs %d" % (what, bn, n * scale))
    return ap, bp, n, dt, fw


def _pair_torch(a, b, scale, what):
    # Both tensors' checks in one expression; any doubt goes to _pair_any, which says why.
    d = a.dtype
    if type(b) is type(a) and a.is_cuda and b.is_cuda and d is b.dtype and \
            a.is_contiguous() and b.is_contiguous():
        n = a.numel()
        if b.numel() == n * scale:
            return a.data_ptr(), b.data_ptr(), n, TORCH_CODES[d], "torch"
    return _pair_any(a, b, scale, what)


def _pair_cupy(a, b, scale, what):
    if type(b) is type(a) and a._c_contiguous and b._c_contiguous and a.dtype is b.dtype:
        n = a.size
        if b.size == n * scale:
            return a.data.ptr, b.data.ptr, n, _cupy_codes[a.dtype], "cupy"
    return _pair_any(a, b, scale, what)


def _read_cai(obj):
    cai = obj.__cuda_array_interface__
    ptr = cai["data"][0]
    shape = cai["shape"]
    count = 1
    for n in shape:
        count *= n
    typestr = cai["typestr"]
    name = _TYPESTR.get(typestr[1:])
    if name is None:
        raise TypeError("NCCL has no data type for typestr %r" % typestr)
    strides = cai.get("strides")
    if strides is not None and count > 1:
        size = int(typestr[2:])
        expect = size
        for n, s in zip(reversed(shape), reversed(strides)):
            if n != 1 and s != expect:
                raise BufferError("%s is not contiguous (strides %r): NCCL reads it as one "
                                  "block" % (type(obj).__name__, tuple(strides)))
            expect *= n
    return ptr, count, dtype_code(name), None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor (dlpack.h, stable since v0.2)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged
_capsule_pointer = None


def _read_dlpack(obj):
    global _capsule_pointer
    if hasattr(obj, "__dlpack_device__"):
        kind, _ = obj.__dlpack_device__()
        if kind not in _DL_CUDA:
            raise _host(obj, "DLPack device type %d" % kind)
    try:
        capsule = obj.__dlpack__(stream=-1)  # -1: the producer synchronizes nothing
    except TypeError:
        capsule = obj.__dlpack__()
    if _capsule_pointer is None:
        f = ctypes.pythonapi.PyCapsule_GetPointer
        f.restype, f.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        _capsule_pointer = f
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))  # DLManagedTensor starts so
    if t.device.device_type not in _DL_CUDA:
        raise _host(obj, "DLPack device type %d" % t.device.device_type)
    name = _DLPACK.get((t.dtype.code, t.dtype.bits))
    if name is None or t.dtype.lanes != 1:
        raise TypeError("NCCL has no data type for DLPack dtype %d/%d" % (t.dtype.code,
                                                                          t.dtype.bits))
    count, expect = 1, 1
    for i in reversed(range(t.ndim)):
        n = t.shape[i]
        if t.strides and n != 1 and t.strides[i] != expect:
            raise BufferError("%s is not contiguous: NCCL reads it as one block"
                              % type(obj).__name__)
        expect *= n
        count *= n
    return (t.data or 0) + t.byte_offset, count, dtype_code(name), None  # capsule freed here


def _reader_for(obj):
    cls = type(obj)
    mods = [c.__module__.split(".")[0] for c in cls.__mro__]
    torch = sys.modules.get("torch")
    if "torch" in mods and torch is not None and issubclass(cls, torch.Tensor):
        return _read_torch
    cupy = sys.modules.get("cupy")
    if "cupy" in mods and cupy is not None and issubclass(cls, cupy.ndarray):
        return _read_cupy_flag if hasattr(obj, "_c_contiguous") else _read_cupy
    if issubclass(cls, Buffer):
        return _read_buffer
    if hasattr(obj, "__cuda_array_interface__"):
        return _read_cai
    if hasattr(obj, "__dlpack__"):
        return _read_dlpack
    return None


READERS = {}  # type -> its reader; comm.py's call path reads it first


def reader(obj):
    """The reader of obj's type, found once and cached in READERS."""
    found = READERS.get(type(obj))
    if found is None:
        found = _reader_for(obj)
        if found is None:
            host = (bytes, bytearray, memoryview)
            if hasattr(obj, "__array_interface__") or isinstance(obj, host):
                raise _host(obj, "it offers host memory only")
            raise TypeError("%s is not a buffer: pass a torch tensor, a CuPy array, an "
                            "object with __cuda_array_interface__ or __dlpack__, or "
                            "ncclshim.Buffer(ptr, count, dtype)" % type(obj).__name__)
        READERS[type(obj)] = found
    return found


def buffer(obj):
    """(ptr, count, dtype, framework) for obj; see the module's doc."""
    return (READERS.get(type(obj)) or reader(obj))(obj)


PAIRS = {}  # type of a call's first buffer -> its pair reader; comm.py's call path reads it


def pair(obj):
    """The pair reader of obj's type (see "pairs" above), found once and cached in PAIRS."""
    found = PAIRS.get(type(obj))
    if found is None:
        one = reader(obj)  # refuses what is no buffer, naming why
        found = _pair_torch if one is _read_torch else \
            _pair_cupy if one is _read_cupy_flag else _pair_any
        PAIRS[type(obj)] = found
    return found


# ---- streams ---------------------------------------------------------------------------

def current(framework):
    """The current stream of a buffer's framework (torch, cupy), else 0."""
    if framework == "torch":
        return sys.modules["torch"].cuda.current_stream().cuda_stream
    if framework == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    return 0


def _stream_reader(s):
    if hasattr(s, "cuda_stream"):
        return operator.attrgetter("cuda_stream")  # C: no Python frame per call
    if hasattr(s, "ptr"):
        return operator.attrgetter("ptr")
    return None


class _Streams(dict):
    """type -> its stream reader; a type not seen yet resolves through stream(), which
    caches the reader its first object shows (an instance attribute counts)."""

    def __missing__(self, cls):
        return stream


STREAMS = _Streams({int: int})  # comm.py's call path: STREAMS[type(s)](s) when s is not None


def stream(s, framework=None):
    """The stream handle (int) for s; see the module's doc."""
    if s is None:
        return current(framework)
    if type(s) is int:
        return s
    reader = STREAMS.get(type(s))  # get: no __missing__
    if reader is None:
        reader = _stream_reader(s)
        if reader is None:
            raise TypeError("%s is not a stream: pass None, an int handle, a torch or a CuPy "
                            "stream" % type(s).__name__)
        STREAMS[type(s)] = reader
    return reader(s)

"""Buffers and streams as Python engines hold them, reduced to what NCCL takes: a device
pointer, an element count, an ncclDataType_t, and a stream handle.

    buffer(obj, name="buffer", written=False) -> (ptr, count, dtype, framework)
        obj: a torch tensor, a CuPy array, any object with __cuda_array_interface__ (JAX,
        Numba, ...) or __dlpack__ (device CUDA), or a Buffer(ptr, count, dtype).
        Host memory is refused (BufferError naming what was passed), so are non-contiguous
        arrays, masked or read-only ones where NCCL writes, big-endian ones, and dtypes NCCL
        has no type for. dtype is BOOL for a bool array: NCCL gets ncclUint8 and the
        reduction torch uses for bool (comm.py).
    stream(s, framework, name="stream") -> int
        s: None (the current stream of the buffer's framework: torch's or CuPy's current
        stream, else 0, the legacy default stream), an int handle in [0, 2**64), a torch
        stream (.cuda_stream), a CuPy stream (.ptr), or an object with __cuda_stream__.
    dtype_code(d) -> int
        d: an ncclDataType_t int, a name ("float32", "bfloat16", "half", "ncclFloat32"), a
        torch dtype, a NumPy or CuPy dtype or scalar type.

torch and CuPy are never imported here: an object is recognised as theirs by its type, and
each type's reader is found once and cached (READERS), so that the call path allocates no
device memory, synchronizes nothing and copies nothing (it is captured in CUDA graphs). Only
__dlpack__ makes a (host) capsule per call; the other readers make none."""
import ctypes
import sys
from typing import Any, Optional, Tuple

from ._args import SIZE_MAX, integer
from ._clib import functions

# NumPy/torch/CuPy names to NCCL's type names (the values come from the generated
# ENUMS["ncclDataType_t"]).
_NAMES = {
    "int8": "ncclInt8", "char": "ncclInt8", "uint8": "ncclUint8", "int32": "ncclInt32",
    "int": "ncclInt32", "uint32": "ncclUint32", "int64": "ncclInt64", "long": "ncclInt64",
    "uint64": "ncclUint64", "float16": "ncclFloat16", "half": "ncclFloat16",
    "float32": "ncclFloat32", "float": "ncclFloat32", "float64": "ncclFloat64",
    "double": "ncclFloat64", "bfloat16": "ncclBfloat16", "float8_e4m3fn": "ncclFloat8e4m3",
    "float8_e4m3": "ncclFloat8e4m3", "float8_e5m2": "ncclFloat8e5m2",
}
# A bool array: one byte per element, sent as ncclUint8; its reductions are torch's (SUM is
# MAX, PROD is MIN, AVG refused), so that every byte stays 0 or 1.
BOOL = -1
# __cuda_array_interface__'s typestr without its byte order: kind and size.
_TYPESTR = {"i1": "int8", "u1": "uint8", "i4": "int32", "u4": "uint32", "i8": "int64",
            "u8": "uint64", "f2": "float16", "f4": "float32", "f8": "float64"}
# DLPack's (type code, bits): 0 int, 1 uint, 2 float, 4 bfloat.
_DLPACK = {(0, 8): "int8", (1, 8): "uint8", (0, 32): "int32", (1, 32): "uint32",
           (0, 64): "int64", (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32",
           (2, 64): "float64", (4, 16): "bfloat16"}
_DL_BOOL = 6
_SIZES = {BOOL: 1}  # ncclDataType_t -> element size in bytes
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
        _codes["bool"] = BOOL
        for nccl, size in (("ncclInt8", 1), ("ncclUint8", 1), ("ncclInt32", 4),
                           ("ncclUint32", 4), ("ncclInt64", 8), ("ncclUint64", 8),
                           ("ncclFloat16", 2), ("ncclFloat32", 4), ("ncclFloat64", 8),
                           ("ncclBfloat16", 2), ("ncclFloat8e4m3", 1), ("ncclFloat8e5m2", 1)):
            _SIZES[enum[nccl]] = size
    return _codes


def dtype_code(d: Any) -> int:
    """NCCL's ncclDataType_t for d (see the module's doc; BOOL for a bool dtype); TypeError
    for one NCCL lacks."""
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


def element_size(code: int) -> int:
    _table()
    return _SIZES[code]


def _extent(ptr, count, size, name):
    """Refuses what NCCL would be handed wrongly: a count whose bytes overflow, memory past
    the address space, a NULL pointer with elements."""
    nbytes = count * size
    if nbytes > SIZE_MAX or ptr + nbytes > SIZE_MAX + 1:
        raise ValueError("%s: %d elements of %d bytes at 0x%x run past the 64-bit address "
                         "space" % (name, count, size, ptr))
    if ptr == 0 and count:
        raise ValueError("%s: a NULL data pointer with %d elements" % (name, count))


class Buffer:
    """Device memory given as a pointer, an element count and a dtype (any dtype_code
    spelling). NCCL is given the pointer as it is: it must be device memory of the
    communicator's GPU (or memory NCCL can reach). Immutable once made."""
    __slots__ = ("ptr", "count", "dtype")

    ptr: int
    count: int
    dtype: int

    def __init__(self, ptr: int, count: int, dtype: Any) -> None:
        ptr = integer(ptr, "Buffer: ptr", 0, SIZE_MAX)
        count = integer(count, "Buffer: count", 0, SIZE_MAX)
        code = dtype_code(dtype)
        _extent(ptr, count, element_size(code), "Buffer")
        for slot, value in (("ptr", ptr), ("count", count), ("dtype", code)):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name, value):
        raise AttributeError("a Buffer is immutable: make a new one")

    def __repr__(self):
        return "Buffer(ptr=0x%x, count=%d, dtype=%d)" % (self.ptr, self.count, self.dtype)


def _host(obj, where, name):
    return BufferError("%s: %s is in host memory (%s): NCCL needs device memory; move it to "
                       "the GPU first" % (name, type(obj).__name__, where))


# ---- readers, one per type (found once, cached in READERS) ------------------------------
# reader(obj, name, written) -> (ptr, count, dtype, framework); `name` names obj in the
# errors, `written` says NCCL writes it (a read-only buffer is refused).

def _read_buffer(b, name, written):
    return b.ptr, b.count, b.dtype, None


def _read_buffer_subclass(b, name, written):
    """A Buffer subclass may answer anything for its fields (a property, __getattribute__):
    each is checked as Buffer() checks it."""
    what = "%s: %s" % (name, type(b).__name__)
    ptr = integer(b.ptr, what + ".ptr", 0, SIZE_MAX)
    count = integer(b.count, what + ".count", 0, SIZE_MAX)
    code = dtype_code(b.dtype)
    _extent(ptr, count, element_size(code), what)
    return ptr, count, code, None


class _Codes(dict):
    """A framework's dtype objects to NCCL codes, each found once (dtype_code of its name)."""

    def __missing__(self, d):
        code = self[d] = dtype_code(d)
        return code


TORCH_CODES = _Codes()  # torch dtype -> NCCL code (BOOL for torch.bool); _fast reads it too


def _read_torch(t, name, written):
    if not t.is_cuda:
        raise _host(t, "torch device %s" % t.device, name)
    if not t.is_contiguous():
        raise BufferError("%s: torch tensor is not contiguous: NCCL reads it as one block; "
                          "pass t.contiguous()" % name)
    return _address(t.data_ptr(), t.numel(), name) + (TORCH_CODES[t.dtype], "torch")


def _address(ptr, count, name):
    """(ptr, count) as a framework reported them, when both are ints C's types hold."""
    if type(ptr) is not int or type(count) is not int or not 0 <= ptr <= SIZE_MAX or \
            not 0 <= count <= SIZE_MAX:
        raise ValueError("%s: the array reports pointer %r and %r elements, not two ints in "
                         "[0, 2**64)" % (name, ptr, count))
    return ptr, count


_cupy_codes = _Codes()


def _read_cupy(a, name, written):
    contiguous = a._c_contiguous if hasattr(a, "_c_contiguous") else a.flags.c_contiguous
    if not contiguous:
        raise BufferError("%s: CuPy array is not C-contiguous: pass cupy.ascontiguousarray(a)"
                          % name)
    return _address(a.data.ptr, a.size, name) + (_cupy_codes[a.dtype], "cupy")


def _field(cai, key, name, kinds, what):
    value = cai.get(key)
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
        raise TypeError("%s: __cuda_array_interface__[%r] must be %s, not %r"
                        % (name, key, what, value))
    return value


def _read_cai(obj, name, written):
    """Every field the protocol defines (versions 0-3) is read and checked."""
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError("%s: %s.__cuda_array_interface__ is a %s, not a dict"
                        % (name, type(obj).__name__, type(cai).__name__))
    version = _field(cai, "version", name, (int,), "an int")
    if not 0 <= version <= 3:
        raise ValueError("%s: __cuda_array_interface__ version %d is not one this package "
                         "reads (0 to 3)" % (name, version))
    typestr = _field(cai, "typestr", name, (str,), "a str such as '<f4'")
    order, kind = typestr[:1], _TYPESTR.get(typestr[1:])
    if typestr[1:] == "b1":
        kind = "bool"
    if kind is None or order not in "<>|=" or not order:
        raise TypeError("%s: NCCL has no data type for typestr %r" % (name, typestr))
    size = int(typestr[2:])
    if order == ">" and size > 1:
        raise ValueError("%s: typestr %r is big-endian; NCCL reduces little-endian values"
                         % (name, typestr))
    shape = _field(cai, "shape", name, (tuple,), "a tuple of ints")
    count = 1
    for n in shape:
        if type(n) is not int or n < 0:
            raise ValueError("%s: __cuda_array_interface__ shape %r holds %r, not an int >= 0"
                             % (name, shape, n))
        count *= n
    strides = cai.get("strides")
    if strides is not None:
        if not isinstance(strides, tuple) or len(strides) != len(shape) or \
                any(type(s) is not int for s in strides):
            raise TypeError("%s: __cuda_array_interface__ strides %r are not %d ints"
                            % (name, strides, len(shape)))
        expect = size
        for n, s in zip(reversed(shape), reversed(strides)):
            if n != 1 and s != expect and count:
                raise BufferError("%s: %s is not contiguous (strides %r): NCCL reads it as "
                                  "one block" % (name, type(obj).__name__, strides))
            expect *= n
    producer = cai.get("stream")  # version 3: the stream the producer's work is on
    if producer is not None and type(producer) is not int:
        raise TypeError("%s: __cuda_array_interface__['stream'] must be None or an int, not %r"
                        % (name, producer))
    if producer is not None and not 1 <= producer <= SIZE_MAX:
        raise ValueError("%s: __cuda_array_interface__ stream %d is not a stream: the "
                         "protocol gives None, 1, 2 or a handle, never 0" % (name, producer))
    if cai.get("mask") is not None:
        raise BufferError("%s: %s is a masked array: NCCL would reduce the masked elements "
                          "too" % (name, type(obj).__name__))
    data = cai.get("data")
    if not isinstance(data, tuple) or len(data) != 2 or type(data[0]) is not int or \
            not isinstance(data[1], bool):
        raise TypeError("%s: __cuda_array_interface__['data'] must be (int pointer, bool "
                        "read-only), not %r" % (name, data))
    ptr, readonly = data
    if not 0 <= ptr <= SIZE_MAX:
        raise ValueError("%s: data pointer %d is not an address" % (name, ptr))
    if readonly and written:
        raise BufferError("%s: %s is read-only and NCCL writes this buffer"
                          % (name, type(obj).__name__))
    _extent(ptr, count, size, name)
    return ptr, count, dtype_code(kind), None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # DLPack's DLTensor (dlpack.h, stable since v0.2)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLVersioned(ctypes.Structure):  # DLManagedTensorVersioned (DLPack 1.0)
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_DL_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged
_DL_READ_ONLY = 1   # DLPACK_FLAG_BITMASK_READ_ONLY
_capsule = {}


def _capsule_api():
    if not _capsule:
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        valid = ctypes.pythonapi.PyCapsule_IsValid
        valid.restype, valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
        _capsule.update(get=get, valid=valid)
    return _capsule


def _read_dlpack(obj, name, written):
    if hasattr(obj, "__dlpack_device__"):
        device = obj.__dlpack_device__()
        if not isinstance(device, tuple) or len(device) != 2 or \
                any(isinstance(v, bool) or not isinstance(v, int) for v in device):
            raise TypeError("%s: %s.__dlpack_device__() returned %r, not (device type, "
                            "device id) as two ints" % (name, type(obj).__name__, device))
        kind = int.__index__(device[0])  # torch's is an IntEnum
        if kind not in _DL_CUDA:
            raise _host(obj, "DLPack device type %d" % kind, name)
    try:  # a versioned capsule carries the read-only flag; -1: the producer syncs nothing
        capsule = obj.__dlpack__(stream=-1, max_version=(1, 0))
    except TypeError:
        try:
            capsule = obj.__dlpack__(stream=-1)
        except TypeError:
            capsule = obj.__dlpack__()
    api = _capsule_api()
    if api["valid"](capsule, b"dltensor_versioned"):
        v = _DLVersioned.from_address(api["get"](capsule, b"dltensor_versioned"))
        if v.major != 1:
            raise BufferError("%s: DLPack %d.%d is not one this package reads (1.x)"
                              % (name, v.major, v.minor))
        if v.flags & _DL_READ_ONLY and written:
            raise BufferError("%s: %s is read-only (DLPack flag) and NCCL writes this buffer"
                              % (name, type(obj).__name__))
        t = v.dl_tensor
    elif api["valid"](capsule, b"dltensor"):
        t = _DLTensor.from_address(api["get"](capsule, b"dltensor"))  # DLManagedTensor
    else:
        raise TypeError("%s: %s.__dlpack__() did not return a DLPack capsule"
                        % (name, type(obj).__name__))
    if t.device.device_type not in _DL_CUDA:
        raise _host(obj, "DLPack device type %d" % t.device.device_type, name)
    bits = t.dtype.bits
    kind = "bool" if t.dtype.code == _DL_BOOL and bits == 8 else \
        _DLPACK.get((t.dtype.code, bits))
    if kind is None or t.dtype.lanes != 1:
        raise TypeError("%s: NCCL has no data type for DLPack dtype %d/%d x%d"
                        % (name, t.dtype.code, bits, t.dtype.lanes))
    if not 0 <= t.ndim <= 64:
        raise ValueError("%s: DLPack ndim %d" % (name, t.ndim))
    count, expect = 1, 1
    for i in reversed(range(t.ndim)):
        n = t.shape[i]
        if n < 0:
            raise ValueError("%s: DLPack shape holds %d" % (name, n))
        if t.strides and n != 1 and t.strides[i] != expect:
            raise BufferError("%s: %s is not contiguous: NCCL reads it as one block"
                              % (name, type(obj).__name__))
        expect *= n
        count *= n
    ptr = (t.data or 0) + t.byte_offset
    _extent(ptr, count, max(1, bits // 8), name)
    return ptr, count, dtype_code(kind), None  # the capsule is freed here


def _reader_for(obj):
    cls = type(obj)
    mods = [c.__module__.split(".")[0] for c in cls.__mro__]
    torch = sys.modules.get("torch")
    if "torch" in mods and torch is not None and issubclass(cls, torch.Tensor):
        return _read_torch
    cupy = sys.modules.get("cupy")
    if "cupy" in mods and cupy is not None and issubclass(cls, cupy.ndarray):
        return _read_cupy
    if cls is Buffer:
        return _read_buffer
    if issubclass(cls, Buffer):
        return _read_buffer_subclass
    if hasattr(obj, "__cuda_array_interface__"):
        return _read_cai
    if hasattr(obj, "__dlpack__"):
        return _read_dlpack
    return None


READERS = {}  # type -> its reader


def reader(obj, name="buffer"):
    """The reader of obj's type, found once and cached in READERS."""
    found = READERS.get(type(obj))
    if found is None:
        found = _reader_for(obj)
        if found is None:
            host = (bytes, bytearray, memoryview)
            if hasattr(obj, "__array_interface__") or isinstance(obj, host):
                raise _host(obj, "it offers host memory only", name)
            raise TypeError("%s: %s is not a buffer: pass a torch tensor, a CuPy array, an "
                            "object with __cuda_array_interface__ or __dlpack__, or "
                            "ncclshim.Buffer(ptr, count, dtype)" % (name, type(obj).__name__))
        READERS[type(obj)] = found
    return found


def buffer(obj: Any, name: str = "buffer",
           written: bool = False) -> Tuple[int, int, int, Optional[str]]:
    """(ptr, count, dtype, framework) for obj; see the module's doc."""
    if obj is None:
        raise TypeError("%s buffer missing" % name)
    return (READERS.get(type(obj)) or reader(obj, name))(obj, name, written)


def type_name(code):
    return "bool" if code == BOOL else str(code)


def pair(a, a_name, a_written, b, b_name, b_written, scale):
    """A call's two buffers: (a's ptr, b's ptr, a's count, dtype, framework). b must be of
    a's dtype and hold scale x a's count elements; *_written: NCCL writes that one."""
    ap, n, dt, fw = buffer(a, a_name, a_written)
    bp, bn, bd, _ = buffer(b, b_name, b_written)
    if bd != dt:
        raise TypeError("%s has NCCL type %s; this call needs %s (%s's)"
                        % (b_name, type_name(bd), type_name(dt), a_name))
    if bn != n * scale:
        raise ValueError("%s has %d elements; this call needs %d" % (b_name, bn, n * scale))
    return ap, bp, n, dt, fw


# ---- streams ---------------------------------------------------------------------------

def current(framework):
    """The current stream of a buffer's framework (torch, cupy), else 0."""
    if framework == "torch":
        return sys.modules["torch"].cuda.current_stream().cuda_stream
    if framework == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    return 0


def _handle(value, name, what):
    if type(value) is not int or not 0 <= value <= SIZE_MAX:
        raise TypeError("%s: %s is %r, not a stream handle (an int in [0, 2**64))"
                        % (name, what, value))
    return value


def _read_cuda_stream(s, name):
    return _handle(getattr(s, "cuda_stream", None), name, type(s).__name__ + ".cuda_stream")


def _read_cupy_stream(s, name):
    return _handle(getattr(s, "ptr", None), name, type(s).__name__ + ".ptr")


def _read_stream_protocol(s, name):
    got = s.__cuda_stream__()
    if not isinstance(got, tuple) or len(got) != 2:
        raise TypeError("%s: %s.__cuda_stream__() returned %r, not (version, handle)"
                        % (name, type(s).__name__, got))
    return _handle(got[1], name, type(s).__name__ + ".__cuda_stream__()")


def _read_int_stream(s, name):
    return _handle(int(s), name, "the handle")


def _stream_reader(s):
    """Only what is a stream: an int, an object with a cuda_stream attribute (torch's
    streams), a CuPy stream (by its type's module), an object with __cuda_stream__ (CUDA
    Python's protocol). The attributes first: torch's and CuPy's streams have the protocol
    too, and an attribute is what the extension reads without a call."""
    cls = type(s)
    if isinstance(s, int) and not isinstance(s, bool):
        return _read_int_stream
    if hasattr(s, "cuda_stream"):
        return _read_cuda_stream
    if cls.__module__.split(".")[0] == "cupy" and hasattr(s, "ptr"):
        return _read_cupy_stream
    if hasattr(cls, "__cuda_stream__"):
        return _read_stream_protocol
    return None


STREAMS = {}  # type -> its stream reader
# type -> the attribute that holds its handle, for the types whose reader reads one; the
# extension's call path reads it (and leaves any other type to stream()).
STREAM_ATTRS = {}
_ATTR_OF = {_read_cuda_stream: "cuda_stream", _read_cupy_stream: "ptr"}


def stream(s: Any, framework: Optional[str] = None, name: str = "stream") -> int:
    """The stream handle (int) for s; see the module's doc."""
    if s is None:
        return current(framework)
    if type(s) is int:
        if 0 <= s <= SIZE_MAX:
            return s
        raise ValueError("%s is %d; a stream handle is in [0, 2**64)" % (name, s))
    found = STREAMS.get(type(s))
    if found is None:
        found = _stream_reader(s)
        if found is None:
            raise TypeError("%s: %s is not a stream: pass None, an int handle, a torch or a "
                            "CuPy stream, or an object with __cuda_stream__"
                            % (name, type(s).__name__))
        STREAMS[type(s)] = found
        if found in _ATTR_OF:
            STREAM_ATTRS[type(s)] = _ATTR_OF[found]
    return found(s, name)

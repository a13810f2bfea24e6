#!/usr/bin/env python3
"""ncclshim's communicator layer on the fake NCCL, run by test_comm.py in a child interpreter
(the package from the source tree, or the wheel installed in a venv):

    comm_checks.py CLASS...      unittest classes of this file
Environment: NCCLSHIM_NCCL_LIBRARY (the fake NCCL the package loads, also driven here through
its fake_nccl_* functions), NCCLSHIM_CUDA_LIBRARY (the fake driver, for Watchdog),
COMM_CHECKS_PACKAGED=1 (the generated module must be the package's own: the wheel)."""
import ctypes
import gc
import importlib.util
import os
import sys
import threading
import types
import unittest
import weakref

import ncclshim
from ncclshim import Buffer, Communicator, NcclshimError, NcclTimeout, NcclUnavailable

# The same mapping the package uses (none for NoNccl, whose path does not exist).
FAKE = ctypes.CDLL(os.environ["NCCLSHIM_NCCL_LIBRARY"]) \
    if os.path.exists(os.environ["NCCLSHIM_NCCL_LIBRARY"]) else None


class FakeCall(ctypes.Structure):  # tests/fakes/fake_nccl.h
    _fields_ = [("function", ctypes.c_char * 64), ("nargs", ctypes.c_int),
                ("size", ctypes.c_size_t * 12), ("bytes", (ctypes.c_ubyte * 128) * 12),
                ("version_code", ctypes.c_int)]


if FAKE is not None:
    FAKE.fake_nccl_last_call.restype = ctypes.POINTER(FakeCall)
    FAKE.fake_nccl_count.restype = ctypes.c_int
    FAKE.fake_nccl_count.argtypes = [ctypes.c_char_p]
    FAKE.fake_nccl_inject.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    FAKE.fake_nccl_set_last_error.argtypes = [ctypes.c_char_p]


def last_call():
    """(function, [each argument as an unsigned integer])."""
    c = FAKE.fake_nccl_last_call().contents
    args = [int.from_bytes(bytes(c.bytes[i][:c.size[i]]), "little") for i in range(c.nargs)]
    return c.function.decode(), args


def count(fn):
    return FAKE.fake_nccl_count(fn.encode())


class Device:
    """A made-up device array: __cuda_array_interface__ with a pointer nobody dereferences."""

    def __init__(self, ptr, n, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,),
                                         "typestr": typestr, "strides": strides, "version": 3}


class Live(unittest.TestCase):
    def setUp(self):
        FAKE.fake_nccl_reset()
        FAKE.fake_nccl_set_live(1)


class Forwarding(Live):
    def test_unique_id_is_bytes(self):
        uid = ncclshim.unique_id()
        self.assertIsInstance(uid, bytes)
        self.assertEqual(len(uid), 128)
        self.assertEqual(count("ncclGetUniqueId"), 1)

    def test_every_collective_forwarded_unchanged(self):
        class CuPyLikeStream:
            ptr = 0x5151
        for mode in ("blocking", "split-blocking", "nonblocking"):
            with Communicator(1, 0, ncclshim.unique_id(), mode=mode) as c:
                raw = c.raw
                a, b = Device(0x1000, 12), Device(0x2000, 12)
                calls = [
                    (lambda: c.all_reduce(a, b, op="max", stream=0x77),
                     ("ncclAllReduce", [0x1000, 0x2000, 12, 7, 2, raw, 0x77])),
                    (lambda: c.all_reduce(a, stream=0x78),
                     ("ncclAllReduce", [0x1000, 0x1000, 12, 7, 0, raw, 0x78])),
                    (lambda: c.broadcast(a, b, root=0, stream=CuPyLikeStream()),
                     ("ncclBroadcast", [0x1000, 0x2000, 12, 7, 0, raw, 0x5151])),
                    (lambda: c.reduce(a, b, root=0, op="prod", stream=3),
                     ("ncclReduce", [0x1000, 0x2000, 12, 7, 1, 0, raw, 3])),
                    (lambda: c.all_gather(a, b, stream=4),
                     ("ncclAllGather", [0x1000, 0x2000, 12, 7, raw, 4])),
                    (lambda: c.reduce_scatter(a, b, op="min", stream=5),
                     ("ncclReduceScatter", [0x1000, 0x2000, 12, 7, 3, raw, 5])),
                    (lambda: c.send(a, peer=0, stream=6),
                     ("ncclSend", [0x1000, 12, 7, 0, raw, 6])),
                    (lambda: c.recv(b, peer=0, stream=7),
                     ("ncclRecv", [0x2000, 12, 7, 0, raw, 7])),
                    (lambda: c.all_to_all(a, b, stream=8),
                     ("ncclAlltoAll", [0x1000, 0x2000, 12, 7, raw, 8])),
                    (lambda: c.gather(a, b, root=0, stream=9),
                     ("ncclGather", [0x1000, 0x2000, 12, 7, 0, raw, 9])),
                    (lambda: c.scatter(a, b, root=0, stream=10),
                     ("ncclScatter", [0x1000, 0x2000, 12, 7, 0, raw, 10])),
                    (lambda: c.all_reduce(Buffer(0x3000, 5, "bfloat16"), stream=0),
                     ("ncclAllReduce", [0x3000, 0x3000, 5, 9, 0, raw, 0])),
                    (lambda: c.all_reduce(Device(0x4000, 6, "<f2"), op=4, stream=0),
                     ("ncclAllReduce", [0x4000, 0x4000, 6, 6, 4, raw, 0])),
                    (lambda: c.all_reduce(Device(0x5000, 7, "<i8"), stream=None),
                     ("ncclAllReduce", [0x5000, 0x5000, 7, 4, 0, raw, 0])),
                    (lambda: c.all_reduce(a, stream=types.SimpleNamespace(cuda_stream=0x4242)),
                     ("ncclAllReduce", [0x1000, 0x1000, 12, 7, 0, raw, 0x4242])),
                ]
                for call, want in calls:
                    before = count(want[0])
                    call()
                    self.assertEqual(count(want[0]), before + 1, (mode, want))
                    if mode != "nonblocking":  # there the wait polls NCCL after the call
                        self.assertEqual(last_call(), want, mode)

    def test_group(self):
        with Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking") as c:
            with c.group():
                c.send(Device(0x1000, 4), peer=0, stream=1)
                c.recv(Device(0x2000, 4), peer=0, stream=1)
            self.assertEqual((count("ncclGroupStart"), count("ncclGroupEnd"),
                              count("ncclSend"), count("ncclRecv")), (1, 1, 1, 1))

    def test_group_of_two_communicators(self):
        with Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking") as a, \
                Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking") as b:
            with ncclshim.group(a, b, timeout=5):
                a.all_reduce(Device(0x1000, 4), stream=1)
                b.all_reduce(Device(0x2000, 4), stream=2)
                self.assertEqual((a._groups, b._groups), (1, 1))
            self.assertEqual((a._groups, b._groups), (0, 0))
            self.assertEqual((count("ncclGroupStart"), count("ncclGroupEnd"),
                              count("ncclAllReduce")), (1, 1, 2))
            FAKE.fake_nccl_inject(b"ncclGroupEnd", 3, 1)
            with self.assertRaisesRegex(NcclshimError, "ncclGroupEnd") as cm:
                with ncclshim.group(a, b, timeout=5):
                    a.all_reduce(Device(0x1000, 4), stream=1)
            self.assertEqual(cm.exception.nccl_result, 3)

    def test_mismatched_buffers_refused_before_nccl(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            with self.assertRaisesRegex(ValueError, "recv has 5 elements; this call needs 4"):
                c.all_reduce(Device(0x1000, 4), Device(0x2000, 5), stream=0)
            with self.assertRaisesRegex(TypeError, "NCCL type 6; this call needs 7"):
                c.all_reduce(Device(0x1000, 4), Device(0x2000, 4, "<f2"), stream=0)
            with self.assertRaisesRegex(ValueError, "unknown reduction"):
                c.all_reduce(Device(0x1000, 4), op="median", stream=0)
            self.assertEqual(count("ncclAllReduce"), 0)

    def test_nccl_error_carries_everything(self):
        with Communicator(1, 0, ncclshim.unique_id(), mode="blocking") as c:
            FAKE.fake_nccl_set_last_error(b"the buffer is not registered")
            FAKE.fake_nccl_inject(b"ncclAllReduce", 4, 1)
            with self.assertRaises(NcclshimError) as cm:
                c.all_reduce(Device(0x1000, 4), stream=0)
            e = cm.exception
            self.assertEqual((e.status, e.status_name, e.nccl_result, e.nccl_name, e.call),
                             (14, "NCCL_ERROR", 4, "ncclInvalidArgument", "ncclAllReduce"))
            self.assertEqual(e.nccl_text, ncclshim._clib.lib().ncclshim_nccl_result_string(4)
                             .decode())
            self.assertTrue(e.nccl_text)
            self.assertEqual(e.last_error, "the buffer is not registered")
            self.assertIn("ncclAllReduce failed: ncclInvalidArgument (4)", str(e))
            c.all_reduce(Device(0x1000, 4), stream=0)  # an argument error breaks nothing
            self.assertEqual(count("ncclAllReduce"), 2)

    def test_host_memory_refused(self):
        class HostArray:
            __array_interface__ = {"data": (0x1000, False), "shape": (4,), "typestr": "<f4"}
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for host in (HostArray(), bytearray(16), memoryview(b"abcd")):
                with self.assertRaisesRegex(BufferError, "host memory.*NCCL needs device"):
                    c.all_reduce(host, stream=0)
            with self.assertRaisesRegex(BufferError, "not contiguous"):
                c.all_reduce(Device(0x1000, 4, strides=(8,)), stream=0)
            with self.assertRaisesRegex(TypeError, "not a buffer"):
                c.all_reduce(object(), stream=0)
            with self.assertRaisesRegex(TypeError, "not a stream"):
                c.all_reduce(Device(0x1000, 4), stream="s")
            self.assertEqual(count("ncclAllReduce"), 0)

    def test_closed_and_bad_arguments(self):
        uid = ncclshim.unique_id()
        with self.assertRaisesRegex(ValueError, "has 3 bytes"):
            Communicator(1, 0, b"abc")
        with self.assertRaisesRegex(TypeError, "bytes"):
            Communicator(1, 0, "uid")
        with self.assertRaisesRegex(ValueError, "mode"):
            Communicator(1, 0, uid, mode="fast")
        with self.assertRaisesRegex(ValueError, "no wait is unbounded"):
            Communicator(1, 0, uid, timeout=-1)
        with self.assertRaisesRegex(NcclshimError, "rank outside|rank"):
            Communicator(1, 3, uid)
        c = Communicator(1, 0, uid)
        self.assertEqual(c.close(), "destroyed")
        self.assertEqual(c.close(), "closed")
        with self.assertRaisesRegex(NcclshimError, "closed"):
            c.all_reduce(Device(0x1000, 4), stream=0)

    def test_no_dependency_imported(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.all_reduce(Device(0x1000, 4))
        self.assertFalse({"torch", "cupy", "numpy", "jax"} & set(sys.modules))


def mock_torch():
    """A fresh copy of the dry run's mock torch (gpu_mock/torch), off sys.path, whose Tensor
    the cases make as Tensor(ptr, n, dtype, cuda=True, contiguous=True): at a made-up
    pointer, memory nobody reads."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_mock", "torch",
                        "__init__.py")
    spec = importlib.util.spec_from_file_location("torch", path)
    torch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(torch)

    class Tensor(torch.Tensor):
        def __init__(self, ptr, n, dtype, cuda=True, contiguous=True):
            super().__init__(n, dtype, "cuda" if cuda else "cpu", contiguous=contiguous,
                             mem=(ctypes.c_byte * 1).from_address(ptr))
    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    return torch


class Frameworks(Live):
    """torch and CuPy objects, recognised by their types (fake modules here)."""

    def setUp(self):
        super().setUp()
        torch = mock_torch()
        cupy = types.ModuleType("cupy")

        class Dtype:  # hashable, as NumPy's dtypes are
            def __init__(self, name):
                self.name = name

        class ndarray:
            def __init__(self, ptr, n, dtype):
                self.data = types.SimpleNamespace(ptr=ptr)
                self.size = n
                self.dtype = Dtype(dtype)
                self.flags = types.SimpleNamespace(c_contiguous=True)
        ndarray.__module__ = "cupy"
        cupy.ndarray = ndarray
        cupy.cuda = types.SimpleNamespace(
            get_current_stream=lambda: types.SimpleNamespace(ptr=0x6060))
        self.torch, self.cupy = torch, cupy
        sys.modules["torch"], sys.modules["cupy"] = torch, cupy
        self.addCleanup(sys.modules.pop, "torch")
        self.addCleanup(sys.modules.pop, "cupy")

    def test_torch(self):
        t = self.torch
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.all_reduce(t.Tensor(0x1000, 8, t.bfloat16), t.Tensor(0x2000, 8, t.bfloat16))
            self.assertEqual(last_call(), ("ncclAllReduce", [0x1000, 0x2000, 8, 9, 0, c.raw,
                                                             t.cuda.current_stream().cuda_stream]))
            with self.assertRaisesRegex(BufferError, "torch device cpu"):
                c.all_reduce(t.Tensor(0x1000, 8, t.float32, cuda=False))
            with self.assertRaisesRegex(BufferError, "contiguous"):
                c.all_reduce(t.Tensor(0x1000, 8, t.float32, contiguous=False))
            self.assertEqual(count("ncclAllReduce"), 1)

    def test_cupy(self):
        cp = self.cupy
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.broadcast(cp.ndarray(0x1000, 8, "float16"), cp.ndarray(0x2000, 8, "float16"))
            self.assertEqual(last_call(), ("ncclBroadcast",
                                           [0x1000, 0x2000, 8, 6, 0, c.raw, 0x6060]))

    def test_torch_call_path_reads_only_cheap_attributes(self):
        # What one all_reduce of two torch tensors costs in Python: the one frame of the
        # generated method (the pair is checked inline), and on each tensor is_cuda, dtype,
        # is_contiguous(), numel(), data_ptr() once; never the interface dict. In place: the
        # method, the in-place pair and torch's reader.
        reads = []

        class Counted(self.torch.Tensor):
            def __getattribute__(self, name):
                reads.append(name)
                return object.__getattribute__(self, name)

            @property
            def __cuda_array_interface__(self):
                raise AssertionError("the interface dict was built")
        Counted.__module__ = "torch"
        self.torch.Tensor = Counted  # the exact type the communicator takes as torch's
        t = self.torch
        x, y = Counted(0x1000, 8, t.float32), Counted(0x2000, 8, t.float32)
        stream = types.SimpleNamespace(cuda_stream=0x3131)
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.all_reduce(x, stream=stream)  # the first call finds and caches the readers
            self.assertIs(ncclshim.comm._TENSOR, Counted)
            reads.clear()
            frames = []
            # The package's own frames: the checkout's path may hold "ncclshim" too.
            package = os.path.dirname(os.path.abspath(ncclshim.__file__)) + os.sep

            def profile(frame, event, arg):
                path = os.path.abspath(frame.f_code.co_filename)
                if event == "call" and path.startswith(package):
                    frames.append(frame.f_code.co_name)
            sys.setprofile(profile)
            try:
                c.all_reduce(x, y, stream=stream)
                c.all_reduce(x, stream=stream)  # in place: one buffer
            finally:
                sys.setprofile(None)
            self.assertEqual(frames, ["all_reduce", "all_reduce", "_in_place", "_read_torch"])
            once = ["is_cuda", "dtype", "is_contiguous", "numel", "data_ptr"]
            internal = {"n", "_mem", "contiguous"}  # the mock's own fields, read by its methods
            self.assertEqual(sorted(r for r in reads if r not in internal), sorted(once * 3))
            self.assertEqual(last_call(), ("ncclAllReduce",
                                           [0x1000, 0x1000, 8, 7, 0, c.raw, 0x3131]))

    def test_generated_calls_forward_torch_pairs_unchanged(self):
        # Every method made from _PAIR_CALL, on its inline path: NCCL gets the pointers in
        # its own order, the call's count and the arguments between datatype and comm.
        t = self.torch
        x, y = t.Tensor(0x1000, 8, t.float32), t.Tensor(0x2000, 8, t.float32)
        big = t.Tensor(0x3000, 8, t.float32)
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            s = 0x4444
            for call, expect in (
                    (lambda: c.all_reduce(x, y, op="max", stream=s),
                     ("ncclAllReduce", [0x1000, 0x2000, 8, 7, 2, c.raw, s])),
                    (lambda: c.broadcast(x, y, root=0, stream=s),
                     ("ncclBroadcast", [0x1000, 0x2000, 8, 7, 0, c.raw, s])),
                    (lambda: c.reduce(x, y, root=0, op="min", stream=s),
                     ("ncclReduce", [0x1000, 0x2000, 8, 7, 3, 0, c.raw, s])),
                    (lambda: c.all_gather(x, big, stream=s),
                     ("ncclAllGather", [0x1000, 0x3000, 8, 7, c.raw, s])),
                    (lambda: c.reduce_scatter(big, x, op="prod", stream=s),
                     ("ncclReduceScatter", [0x3000, 0x1000, 8, 7, 1, c.raw, s]))):
                call()
                self.assertEqual(last_call(), expect)
            self.assertIn("Communicator.reduce_scatter", repr(Communicator.reduce_scatter))
            self.assertIn("reduce(send) over the ranks", Communicator.all_reduce.__doc__)

    def test_torch_pair_refusals_name_the_problem(self):
        t = self.torch
        x = t.Tensor(0x1000, 8, t.float32)
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for y, error, text in (
                    (t.Tensor(0x2000, 8, t.float32, cuda=False), BufferError, "torch device cpu"),
                    (t.Tensor(0x2000, 8, t.float32, contiguous=False), BufferError,
                     "not contiguous"),
                    (t.Tensor(0x2000, 8, t.bfloat16), TypeError, "NCCL type 9; this call needs 7"),
                    (t.Tensor(0x2000, 7, t.float32), ValueError, "recv has 7 elements; this "
                                                                 "call needs 8"),
                    (Device(0x2000, 8, "<f2"), TypeError, "NCCL type 6; this call needs 7")):
                with self.assertRaisesRegex(error, text):
                    c.all_reduce(x, y, stream=0)
            with self.assertRaisesRegex(ValueError, "send has 7 elements; this call needs 8"):
                c.reduce_scatter(t.Tensor(0x2000, 7, t.float32), x, stream=0)  # recv read first
            with self.assertRaisesRegex(BufferError, "torch device cpu"):
                c.all_reduce(t.Tensor(0x2000, 8, t.float32, cuda=False), x, stream=0)
            c.all_gather(x, Device(0x2000, 8), stream=0)  # mixed types: the checked path
            self.assertEqual(count("ncclAllReduce"), 0)
            self.assertEqual(count("ncclAllGather"), 1)

    def test_cupy_contiguity_flag_read_without_flags_object(self):
        cp = self.cupy

        class Fast(cp.ndarray):
            _c_contiguous = True

            def __getattribute__(self, name):
                if name == "flags":
                    raise AssertionError("a Flags object was made")
                return object.__getattribute__(self, name)
        Fast.__module__ = "cupy"
        a, b = Fast(0x1000, 8, "float32"), Fast(0x2000, 8, "float32")
        b.dtype = a.dtype  # one dtype object, as CuPy's arrays of one dtype share
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.all_reduce(a, b, stream=0)
            c.all_reduce(a, stream=0)
            self.assertIs(ncclshim.buffers.PAIRS[Fast], ncclshim.buffers._pair_cupy)
            self.assertEqual(last_call(), ("ncclAllReduce",
                                           [0x1000, 0x1000, 8, 7, 0, c.raw, 0]))
            b._c_contiguous = False
            with self.assertRaisesRegex(AssertionError, "Flags object"):  # the checked path
                c.all_reduce(a, b, stream=0)

    def test_dtype_names(self):
        for name, code in (("float32", 7), ("float", 7), ("half", 6), ("bfloat16", 9),
                           ("ncclFloat8e5m2", 11), ("float8_e4m3fn", 10), ("int64", 4),
                           ("uint8", 1), (self.torch.bfloat16, 9), (5, 5)):
            self.assertEqual(ncclshim.dtype_code(name), code, name)
        with self.assertRaisesRegex(TypeError, "no data type"):
            ncclshim.dtype_code("complex64")


class DLPack(Live):
    def capsule_of(self, device_type, ptr=0x9000, offset=0x10, shape=(3, 4), code=2, bits=32):
        f = ncclshim.buffers
        shape_arr = (ctypes.c_int64 * len(shape))(*shape)

        class Managed(ctypes.Structure):  # DLManagedTensor: the DLTensor first
            _fields_ = [("t", f._DLTensor), ("ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p)]
        m = Managed()
        m.t.data, m.t.byte_offset, m.t.ndim = ptr, offset, len(shape)
        m.t.device.device_type, m.t.dtype.code, m.t.dtype.bits = device_type, code, bits
        m.t.dtype.lanes = 1
        m.t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        keep = (m, shape_arr)

        class Exporter:
            def __dlpack__(self, stream=None):
                self.stream, self.keep = stream, keep
                return new(ctypes.addressof(m), b"dltensor", None)

            def __dlpack_device__(self):
                return (device_type, 0)
        return Exporter()

    def test_device_forwarded(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            x = self.capsule_of(2)
            c.all_reduce(x, stream=0)
            self.assertEqual(last_call(), ("ncclAllReduce",
                                           [0x9010, 0x9010, 12, 7, 0, c.raw, 0]))
            self.assertEqual(x.stream, -1)  # asks the producer to synchronize nothing

    def test_host_refused(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            with self.assertRaisesRegex(BufferError, "host memory.*DLPack device type 1"):
                c.all_reduce(self.capsule_of(1), stream=0)


class Lifecycle(Live):
    def test_nonblocking_init_is_waited_for(self):
        FAKE.fake_nccl_set_async(3, 0)
        with Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking") as c:
            self.assertEqual(c.state, "ready")

    def test_init_that_never_finishes_times_out_and_aborts(self):
        FAKE.fake_nccl_set_async(-1, 0)
        with self.assertRaises(NcclTimeout) as cm:
            Communicator(1, 0, ncclshim.unique_id(), mode="split-blocking", timeout=0.05)
        self.assertEqual(cm.exception.status_name, "TIMEOUT")
        self.assertIn("50 ms", str(cm.exception))
        self.assertEqual(count("ncclCommAbort"), 1)

    def test_close_aborts_when_destroy_fails(self):
        c = Communicator(1, 0, ncclshim.unique_id(), mode="blocking")
        FAKE.fake_nccl_inject(b"ncclCommFinalize", 3, 1)
        self.assertEqual(c.close(), "aborted")
        self.assertEqual(count("ncclCommAbort"), 1)

    def test_context_manager_aborts_after_an_exception(self):
        with self.assertRaises(KeyError):
            with Communicator(1, 0, ncclshim.unique_id(), mode="blocking"):
                raise KeyError("engine failure")
        self.assertEqual((count("ncclCommAbort"), count("ncclCommDestroy")), (1, 0))

    def test_symmetric_buffer(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            with c.symmetric(5000) as buf:
                self.assertEqual(buf.nbytes, 8192)
                self.assertEqual(buf.ptr % 4096, 0)
                self.assertTrue(buf.window)
                self.assertEqual(buf.__cuda_array_interface__["shape"], (8192,))
                c.all_reduce(buf.view("float32"), stream=0)
                self.assertEqual(last_call()[1][:4], [buf.ptr, buf.ptr, 2048, 7])
                c.all_reduce(buf, stream=0)  # as bytes, through __cuda_array_interface__
                self.assertEqual(last_call()[1][:4], [buf.ptr, buf.ptr, 8192, 1])
            FAKE.fake_nccl_live_windows.restype = ctypes.c_int
            FAKE.fake_nccl_live_allocations.restype = ctypes.c_int
            self.assertEqual((FAKE.fake_nccl_live_windows(),
                              FAKE.fake_nccl_live_allocations()), (0, 0))

    def test_record_graph_where_present(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            if ncclshim._clib.has("ncclshim_comm_record_graph"):
                with self.assertRaises(NcclshimError):  # not watched
                    c.record_graph(0, "decode", 4)
            else:
                with self.assertRaisesRegex(NcclshimError, "no ncclshim_comm_record_graph"):
                    c.record_graph(0, "decode", 4)

    def test_generated_module_is_the_packages(self):
        if os.environ.get("COMM_CHECKS_PACKAGED") != "1":
            self.skipTest("source tree")
        here = os.path.dirname(ncclshim.__file__)
        self.assertTrue(here.startswith(sys.prefix), here)  # the venv's site-packages
        self.assertEqual(os.path.dirname(ncclshim._clib.functions().__file__), here)


class Watchdog(Live):
    """The fake driver's events never fire once fake_cuda_set_event_query(600) is set."""

    def setUp(self):
        super().setUp()
        self.cuda = ctypes.CDLL(os.environ["NCCLSHIM_CUDA_LIBRARY"])
        self.assertEqual(self.cuda.fake_cuda_use_device(0), 0)  # as a CUDA program has one
        self.cuda.fake_cuda_new_stream.restype = ctypes.c_void_p
        self.stream = self.cuda.fake_cuda_new_stream(0)  # a stream of the fake driver's
        self.cuda.fake_cuda_set_event_query(600)
        self.addCleanup(self.cuda.fake_cuda_set_event_query, 0)

    def test_failure_reaches_python_and_next_call_raises(self):
        fired, seen = threading.Event(), []

        def on_failure(comm, error):
            seen.append((comm, error, threading.current_thread() is threading.main_thread()))
            fired.set()
        with ncclshim.Watchdog(on_failure=on_failure, interval=0.005) as dog:
            c = Communicator(1, 0, ncclshim.unique_id())
            c.watch(dog, timeout=0.05)
            c.all_reduce(Device(0x1000, 4), stream=self.stream)
            self.assertTrue(fired.wait(30), "the watchdog never called back")
            comm, error, on_main = seen[0]
            self.assertIs(comm, c)
            self.assertFalse(on_main)
            self.assertIsInstance(error, NcclTimeout)
            self.assertIn("ncclAllReduce", str(error))
            before = count("ncclAllReduce")
            with self.assertRaises(NcclshimError) as cm:
                c.all_reduce(Device(0x1000, 4), stream=self.stream)
            self.assertEqual(cm.exception.status_name, "TIMEOUT")
            self.assertEqual(count("ncclAllReduce"), before)  # refused before NCCL
            self.assertEqual(c.abort(), "aborted")
        self.assertEqual(len(seen), 1)

    def test_stop_from_the_callback_is_deferred(self):
        fired = threading.Event()

        def on_failure(comm, error):
            dog.stop()  # deferred: it returns at once, the thread stops after the callback
            fired.set()
        dog = ncclshim.Watchdog(on_failure=on_failure, interval=0.005)
        c = Communicator(1, 0, ncclshim.unique_id())
        c.watch(dog, timeout=0.05)
        c.all_reduce(Device(0x1000, 4), stream=self.stream)
        self.assertTrue(fired.wait(30), "the watchdog never called back")
        for t in threading.enumerate():
            if t.name == "ncclshim-watchdog-stop":
                t.join(30)
        self.assertIsNone(dog._dog)
        c.abort()

    def test_grouped_operations_recorded_at_the_group_end(self):
        self.cuda.fake_cuda_set_event_query(0)  # every event fires: nothing fails here
        from ncclshim import _clib

        def records():  # operations the watchdog counts as recorded (it shares events)
            counts = _clib.functions().STRUCTS["ncclshim_watch_counts"]()
            counts.size = ctypes.sizeof(counts)
            _clib.check(_clib.lib().ncclshim_comm_watch_counts(c._c, ctypes.byref(counts)),
                        "ncclshim_comm_watch_counts")
            return counts.recorded
        with ncclshim.Watchdog(interval=0.005) as dog:
            with Communicator(1, 0, ncclshim.unique_id()) as c:
                c.watch(dog, timeout=5)
                before = records()
                with c.group():
                    c.send(Device(0x1000, 4), peer=0, stream=1)
                    c.recv(Device(0x2000, 4), peer=0, stream=1)
                    self.assertEqual(records(), before)  # NCCL has enqueued nothing yet
                self.assertEqual(records(), before + 2)
                c.all_reduce(Device(0x1000, 4), stream=1)
                self.assertEqual(records(), before + 3)

    def test_a_dropped_watchdog_lives_until_stopped(self):
        ref = weakref.ref(ncclshim.Watchdog(interval=0.005))
        gc.collect()
        self.assertIsNotNone(ref(), "its callback could be freed while the thread runs")
        ref().stop()
        gc.collect()
        self.assertIsNone(ref())


class Missing(Live):
    """On NCCL 2.27.3: the collectives of 2.28.3 raise at once, naming the release."""

    def test_missing_collectives_raise_naming_the_release(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for name, call in (("ncclAlltoAll", lambda: c.all_to_all(Device(1, 4),
                                                                     Device(2, 4))),
                               ("ncclGather", lambda: c.gather(Device(1, 4), Device(2, 4))),
                               ("ncclScatter", lambda: c.scatter(Device(1, 4), Device(2, 4)))):
                with self.assertRaises(NcclUnavailable) as cm:
                    call()
                self.assertRegex(str(cm.exception),
                                 "%s came with NCCL 2.28.3; the loaded NCCL 2.27.3 .* lacks it"
                                 % name)
                self.assertEqual((cm.exception.status_name, cm.exception.call),
                                 ("UNAVAILABLE", name))
                self.assertEqual(count(name), 0)  # never called


class NoNccl(unittest.TestCase):
    def test_unique_id_without_nccl(self):
        with self.assertRaisesRegex(NcclUnavailable, "no NCCL"):
            ncclshim.unique_id()


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])

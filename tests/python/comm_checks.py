#!/usr/bin/env python3
"""ncclshim's communicator layer on the fake NCCL, run by test_comm.py in a child interpreter
(the package from the source tree, or the wheel installed in a venv):

    comm_checks.py CLASS...      unittest classes of this file
Environment: NCCLSHIM_NCCL_LIBRARY (the fake NCCL the package loads, also driven here through
its fake_nccl_* functions), NCCLSHIM_CUDA_LIBRARY (the fake driver, for Watchdog),
COMM_CHECKS_PACKAGED=1 (the generated module must be the package's own: the wheel)."""
import copy
import ctypes
import gc
import importlib.util
import inspect
import os
import pickle
import random
import sys
import threading
import time
import types
import unittest
import weakref

import ncclshim
from ncclshim import Buffer, Communicator, NcclshimError, NcclTimeout, NcclUnavailable

# The path this run was asked for (test_comm.py): "fast", the extension, or "pure".
FAST = os.environ.get("COMM_CHECKS_PATH") == "fast"
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
        CuPyLikeStream.__module__ = "cupy.cuda.stream"  # a CuPy stream is known by its type
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

    def test_torch_reduce_op_members(self):
        class RedOpType:  # as pybind11 makes torch's: hashed by value, printed by name
            def __init__(self, name, value):
                self.name, self.value = name, value

            def __str__(self):
                return "RedOpType." + self.name

            def __hash__(self):
                return self.value

            def __eq__(self, other):
                return type(other) is RedOpType and other.value == self.value
        # torch's values are not NCCL's: only the names count
        members = [("SUM", 0, 0), ("AVG", 1, 4), ("PRODUCT", 2, 1), ("MIN", 3, 3),
                   ("MAX", 4, 2)]
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for name, value, nccl in members * 2:  # the second time from what was seen
                c.all_reduce(Device(0x1000, 4), op=RedOpType(name, value), stream=0)
                self.assertEqual(last_call()[1][4], nccl, name)

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
            with self.assertRaisesRegex(ValueError, "op 'median' is not a reduction"):
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
        with self.assertRaisesRegex(ValueError, "timeout must be .*no wait is unbounded"):
            Communicator(1, 0, uid, timeout=-1)
        with self.assertRaisesRegex(ValueError, r"rank is 3; a rank of this communicator is "
                                                r"in \[0, 1\)"):
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

    def test_dtype_objects_made_at_each_read(self):
        # torch keeps one object per dtype; a tensor type that makes one at each read must
        # not pass for another dtype when the second object takes the first's freed address
        class Fresh:
            __slots__ = ("name",)

            def __init__(self, name):
                self.name = name

            def __hash__(self):
                return hash(self.name)

            def __eq__(self, other):
                return type(other) is Fresh and other.name == self.name

        class Tensor:
            is_cuda = True

            def __init__(self, ptr, name):
                self.ptr, self.name = ptr, name

            @property
            def dtype(self):
                return Fresh(self.name)

            def is_contiguous(self):
                return True

            def numel(self):
                return 4

            def data_ptr(self):
                return self.ptr
        Tensor.__module__ = "torch"
        self.torch.Tensor = Tensor
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for _ in range(3):  # the first call teaches the dtypes; the others are the fast
                with self.assertRaisesRegex(TypeError, "recv has NCCL type 6; this call needs "
                                                       "7"):
                    c.all_reduce(Tensor(0x1000, "float32"), Tensor(0x2000, "float16"),
                                 stream=0)
            self.assertEqual(count("ncclAllReduce"), 0)
            c.all_reduce(Tensor(0x1000, "float16"), Tensor(0x2000, "float16"), stream=0)
            self.assertEqual(last_call()[1][:4], [0x1000, 0x2000, 4, 6])

    def test_cupy(self):
        cp = self.cupy
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.broadcast(cp.ndarray(0x1000, 8, "float16"), cp.ndarray(0x2000, 8, "float16"))
            self.assertEqual(last_call(), ("ncclBroadcast",
                                           [0x1000, 0x2000, 8, 6, 0, c.raw, 0x6060]))

    def test_torch_call_path_reads_only_cheap_attributes(self):
        # What one all_reduce of two torch tensors costs: with the extension, no Python
        # frame of the package at all, and on each tensor is_cuda, is_contiguous(), dtype,
        # numel(), data_ptr() once; on the pure path the same reads through the readers.
        # Never the interface dict.
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

        class Stream:  # as torch's: the handle attribute and CUDA Python's protocol
            cuda_stream = 0x3131

            def __cuda_stream__(self):
                raise AssertionError("the protocol was called: the attribute is cheaper")
        Stream.__module__ = "torch.cuda.streams"
        stream = Stream()
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            c.all_reduce(x, stream=stream)  # the first call finds and caches the readers
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
            if FAST:
                self.assertEqual(frames, [])
            else:
                self.assertEqual(frames[0], "all_reduce")
            once = ["is_cuda", "dtype", "is_contiguous", "numel", "data_ptr"]
            internal = {"n", "_mem", "contiguous", "device"}  # the mock's own fields
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
            # written out in comm.py, where grep, IDEs and type checkers see them
            source = inspect.getsourcefile(ncclshim.comm._PyCalls.reduce_scatter)
            self.assertEqual(os.path.basename(source), "comm.py")
            self.assertIn("reduce(send) over the ranks", ncclshim.comm._PyCalls.all_reduce.__doc__)

    def test_torch_calls_in_every_mode_and_nccls_errors(self):
        # The torch path (the extension's, where it loads) in the three modes, an error NCCL
        # answers raised with everything, and a watched communicator's records.
        t = self.torch
        x, y = t.Tensor(0x1000, 8, t.float32), t.Tensor(0x2000, 8, t.float32)
        for mode in ("blocking", "split-blocking", "nonblocking"):
            with Communicator(1, 0, ncclshim.unique_id(), mode=mode) as c:
                for _ in range(3):
                    before = count("ncclAllReduce")
                    c.all_reduce(x, y, op="max", stream=0x55)
                    self.assertEqual(count("ncclAllReduce"), before + 1)
                    if mode != "nonblocking":
                        self.assertEqual(last_call(), ("ncclAllReduce", [
                            0x1000, 0x2000, 8, 7, 2, c.raw, 0x55]))
                FAKE.fake_nccl_set_last_error(b"injected")
                FAKE.fake_nccl_inject(b"ncclAllReduce", 4, 1)
                with self.assertRaises(NcclshimError) as cm:
                    c.all_reduce(x, y, stream=0x55)
                self.assertEqual((cm.exception.nccl_result, cm.exception.call,
                                  cm.exception.last_error), (4, "ncclAllReduce", "injected"))
                before = count("ncclSend")
                c.send(x, peer=0, stream=1)
                self.assertEqual(count("ncclSend"), before + 1)
        cuda = ctypes.CDLL(os.environ["NCCLSHIM_CUDA_LIBRARY"])
        cuda.fake_cuda_set_event_query(0)
        # A watched record names its stream to the driver: a real stream of the fake's, with
        # device 0 current, as in a CUDA program.
        self.assertEqual(cuda.fake_cuda_use_device(0), 0)
        cuda.fake_cuda_new_stream.restype = ctypes.c_void_p
        stream = cuda.fake_cuda_new_stream(0)
        with ncclshim.Watchdog(interval=0.005) as dog:
            with Communicator(1, 0, ncclshim.unique_id()) as c:
                c.watch(dog, timeout=5)
                for _ in range(3):
                    c.all_reduce(x, y, stream=stream)
                counts = ncclshim._clib.functions().STRUCTS["ncclshim_watch_counts"]()
                counts.size = ctypes.sizeof(counts)
                ncclshim._clib.check(ncclshim._clib.lib().ncclshim_comm_watch_counts(
                    c._c, ctypes.byref(counts)), "ncclshim_comm_watch_counts")
                self.assertEqual(counts.recorded, 3)

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
            self.assertEqual(last_call(), ("ncclAllReduce",
                                           [0x1000, 0x1000, 8, 7, 0, c.raw, 0]))
            b._c_contiguous = False
            with self.assertRaisesRegex(BufferError, "recv: CuPy array is not C-contiguous"):
                c.all_reduce(a, b, stream=0)

    def test_dtype_names(self):
        for name, code in (("float32", 7), ("float", 7), ("half", 6), ("bfloat16", 9),
                           ("ncclFloat8e5m2", 11), ("float8_e4m3fn", 10), ("int64", 4),
                           ("uint8", 1), (self.torch.bfloat16, 9), (5, 5)):
            self.assertEqual(ncclshim.dtype_code(name), code, name)
        with self.assertRaisesRegex(TypeError, "no data type"):
            ncclshim.dtype_code("complex64")


class DLPack(Live):
    def capsule_of(self, device_type, ptr=0x9000, offset=0x10, shape=(3, 4), code=2, bits=32,
                   read_only=None):
        """An exporter of a DLPack capsule; read_only not None: a versioned one (DLPack 1.0)
        with the read-only flag so."""
        f = ncclshim.buffers
        shape_arr = (ctypes.c_int64 * len(shape))(*shape)

        class Managed(ctypes.Structure):  # DLManagedTensor: the DLTensor first
            _fields_ = [("t", f._DLTensor), ("ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p)]
        if read_only is None:
            m, name = Managed(), b"dltensor"
            t = m.t
        else:
            m, name = f._DLVersioned(major=1, minor=0, flags=int(read_only)), b"dltensor_versioned"
            t = m.dl_tensor
        t.data, t.byte_offset, t.ndim = ptr, offset, len(shape)
        t.device.device_type, t.dtype.code, t.dtype.bits = device_type, code, bits
        t.dtype.lanes = 1
        t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        keep = (m, shape_arr)
        versioned = read_only is not None

        class Exporter:
            def __dlpack__(self, stream=None, **kw):
                if kw and not versioned:
                    raise TypeError("max_version")  # an exporter older than DLPack 1.0
                self.stream, self.keep = stream, keep
                return new(ctypes.addressof(m), name, None)

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

    def test_device_answer_checked(self):
        class Kind(int):  # torch answers an IntEnum
            pass
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for device in ((2,), ("cuda", 0), [2, 0], (True, 0), (2, 0, 0), None):
                x = self.capsule_of(2)
                x.__dlpack_device__ = lambda device=device: device
                with self.assertRaisesRegex(TypeError, r"__dlpack_device__\(\) returned .*not "
                                            r"\(device type, device id\) as two ints"):
                    c.all_reduce(x, stream=0)
            self.assertEqual(count("ncclAllReduce"), 0)
            x = self.capsule_of(2)
            x.__dlpack_device__ = lambda: (Kind(2), Kind(0))
            c.all_reduce(x, stream=0)
            self.assertEqual(last_call()[1][:3], [0x9010, 0x9010, 12])


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
            for use in (lambda: buf.view("float32"), lambda: c.all_reduce(buf, stream=0)):
                with self.assertRaisesRegex(NcclshimError, "the symmetric buffer is freed"):
                    use()
            FAKE.fake_nccl_live_windows.restype = ctypes.c_int
            FAKE.fake_nccl_live_allocations.restype = ctypes.c_int
            self.assertEqual((FAKE.fake_nccl_live_windows(),
                              FAKE.fake_nccl_live_allocations()), (0, 0))

    def test_owners_refuse_copy_and_pickle(self):
        # each frees its handle once: a copy would free it twice, a pickle carry its address
        with Communicator(1, 0, ncclshim.unique_id()) as c, c.symmetric(64) as buf, \
                ncclshim.Watchdog() as dog:
            for owner in (c, buf, dog):
                for action in (copy.copy, copy.deepcopy, pickle.dumps):
                    with self.assertRaisesRegex(TypeError, "a %s owns a libncclshim handle"
                                                % type(owner).__name__):
                        action(owner)
            c.all_reduce(buf, stream=0)  # nothing was freed
            self.assertEqual(last_call()[1][0], buf.ptr)
            with self.assertRaisesRegex(TypeError, "already made"):  # the handle is kept
                c.__init__(1, 0, ncclshim.unique_id())
            self.assertEqual((c.state, count("ncclCommInitRankConfig")), ("ready", 1))

    def test_record_graph_where_present(self):
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            if ncclshim._clib.has("ncclshim_comm_record_graph"):
                with self.assertRaises(NcclshimError):  # not watched
                    c.record_graph(0, "decode", 4)
            else:
                with self.assertRaisesRegex(NcclshimError, "no ncclshim_comm_record_graph"):
                    c.record_graph(0, "decode", 4)

    def test_signatures_are_the_python_methods(self):
        # help() and inspect show the C methods with the Python methods' parameters
        for name in ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
                     "send", "recv"):
            ours, python = (inspect.signature(getattr(cls, name)).parameters.values()
                            for cls in (Communicator, ncclshim.comm._PyCalls))
            self.assertEqual([(p.name, p.default) for p in ours][1:],
                             [(p.name, p.default) for p in python][1:], name)

    def test_extension_type_alone_raises(self):
        fast = ncclshim._clib.fast_module()
        if fast is None:
            self.skipTest("pure Python path")
        torch = mock_torch()
        sys.modules["torch"] = torch
        self.addCleanup(sys.modules.pop, "torch")
        x, big = torch.Tensor(0x1000, 4, torch.float32), torch.Tensor(0x2000, 16, torch.float32)
        with Communicator(1, 0, ncclshim.unique_id()) as bound:  # the table bound, dtype seen
            bound.all_reduce(x, stream=0)
        c = fast.Calls()  # no Communicator around it: no comm, nranks 0
        for call in (lambda: c.reduce_scatter(big, x, stream=0),
                     lambda: c.all_gather(x, big, stream=0), lambda: c.all_reduce(x, stream=0),
                     lambda: c.all_reduce(Device(0x1000, 4), stream=0),
                     lambda: c.send(Device(0x1000, 4), 0, 0), lambda: c.recv(),
                     lambda: c.reduce_scatter(Device(0x1000, 16), Device(0x2000, 4))):
            with self.assertRaises(Exception):
                call()
        with self.assertRaisesRegex(ValueError, "nranks must be in"):
            c.nranks = 0
        with self.assertRaisesRegex(ValueError, "NULL"):
            fast.bind(0)
        self.assertEqual(count("ncclAllReduce") + count("ncclSend"), 1)  # bound's own

    def test_generated_module_is_the_packages(self):
        if os.environ.get("COMM_CHECKS_PACKAGED") != "1":
            self.skipTest("source tree")
        here = os.path.dirname(ncclshim.__file__)
        self.assertTrue(here.startswith(sys.prefix), here)  # the venv's site-packages
        self.assertEqual(os.path.dirname(ncclshim._clib.functions().__file__), here)


class Tracker:
    """Wraps libncclshim's functions that take a handle first (as the package calls them,
    through _clib.lib()): counts the calls in flight per handle, holds the first call of
    `gate` at its start until release() (a call in flight, deterministically), and records
    a free (or a second ncclshim_symmem_free) while the handle is in flight or after it
    is freed as a violation, without doing it (a leak, not a crash)."""
    NAMES = ("ncclshim_comm_check", "ncclshim_comm_wait", "ncclshim_comm_raw",
             "ncclshim_comm_abort", "ncclshim_comm_destroy", "ncclshim_comm_state_of",
             "ncclshim_comm_record", "ncclshim_comm_free", "ncclshim_symmem_free")
    FREES = ("ncclshim_comm_free", "ncclshim_symmem_free")

    def __init__(self, case, gate=None):
        self.lib = ncclshim._clib.lib()
        self.inflight, self.freed, self.violations = {}, [], []
        self.gate, self.entered, self.opened = gate, threading.Event(), threading.Event()
        self.lock = threading.Lock()
        for name in self.NAMES:
            real = getattr(self.lib, name)
            setattr(self.lib, name, self._wrap(name, real))
            case.addCleanup(setattr, self.lib, name, real)
        case.addCleanup(self.opened.set)

    def _wrap(self, name, real):
        def call(handle, *args):
            with self.lock:
                if handle in self.freed or (name in self.FREES and self.inflight.get(handle)):
                    self.violations.append((name, handle))
                    return 0 if name != "ncclshim_comm_free" else None
                self.inflight[handle] = self.inflight.get(handle, 0) + 1
            try:
                if name in (self.gate, "ncclshim_comm_check") and not self.entered.is_set():
                    self.entered.set()  # the first wait, or the gate, has begun
                    if name == self.gate:
                        self.opened.wait(10)
                return real(handle, *args)
            finally:
                with self.lock:
                    self.inflight[handle] -= 1
                    if name in self.FREES:
                        self.freed.append(handle)
        return call

    def release(self):
        self.opened.set()


class Threads(Live):
    """close() and abort() from another thread while a call on the same object is in
    flight: the handle is freed once, after the last call has returned."""

    def in_flight(self, c, call, gate="ncclshim_comm_check"):
        """c (non-blocking, its collectives left in progress) with `call` running on a
        thread and held inside ncclshim_comm_check; (tracker, thread, outcome)."""
        tracker = Tracker(self, gate)
        FAKE.fake_nccl_inject(b"ncclAllReduce", 7, -1)  # ncclInProgress: a wait follows
        FAKE.fake_nccl_set_async(-1, 0)
        out = []

        def run():
            try:
                call()
                out.append("returned")
            except NcclshimError as e:
                out.append(e)
        thread = threading.Thread(target=run)
        thread.start()
        self.assertTrue(tracker.entered.wait(10))
        return tracker, thread, out

    def finish(self, c, tracker, thread, out, handle):
        with self.assertRaisesRegex(NcclshimError, "closed"):  # new calls: at once
            c.all_reduce(Device(0x1000, 4), stream=0)
        self.assertEqual(c.state, "closed")
        self.assertEqual(tracker.violations, [])  # nothing freed under the held call
        tracker.release()
        thread.join(10)
        self.assertFalse(thread.is_alive())
        self.assertIsInstance(out[0], NcclshimError)  # the wait ended with an error
        self.assertEqual(tracker.violations, [])
        self.assertEqual(tracker.freed, [handle])  # freed once, by the last call out
        self.assertEqual(c.close(), "closed")

    def test_abort_while_a_wait_is_in_flight(self):
        c = Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking", timeout=5)
        handle = c._c
        tracker, thread, out = self.in_flight(
            c, lambda: c.all_reduce(Device(0x1000, 4), stream=0))
        self.assertEqual(c.abort(timeout=0.1), "aborted")
        self.finish(c, tracker, thread, out, handle)

    def test_close_while_a_wait_is_in_flight(self):
        c = Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking", timeout=5)
        handle = c._c
        tracker, thread, out = self.in_flight(
            c, lambda: c.all_reduce(Device(0x1000, 4), stream=0))
        # the held call outlives close()'s timeout: close aborts, which ends the wait
        self.assertEqual(c.close(timeout=0.1), "aborted")
        self.assertEqual(count("ncclCommFinalize"), 0)  # never under a call in flight
        self.finish(c, tracker, thread, out, handle)

    def test_close_ends_a_real_wait_in_flight(self):
        c = Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking", timeout=20)
        handle = c._c
        tracker, thread, out = self.in_flight(
            c, lambda: c.all_reduce(Device(0x1000, 4), stream=0), gate=None)
        time.sleep(0.05)  # ungated: the thread is inside its 20 s wait
        start = time.monotonic()
        self.assertEqual(c.close(timeout=0.2), "aborted")
        thread.join(10)
        self.assertLess(time.monotonic() - start, 5)  # the abort ended the 20 s wait
        self.assertIsInstance(out[0], NcclshimError)
        self.assertEqual((tracker.violations, tracker.freed), ([], [handle]))

    def test_abort_while_a_torch_collective_is_in_flight(self):
        torch = mock_torch()
        sys.modules["torch"] = torch
        self.addCleanup(sys.modules.pop, "torch")
        c = Communicator(1, 0, ncclshim.unique_id(), mode="nonblocking", timeout=5)
        handle = c._c
        x = torch.Tensor(0x1000, 8, torch.float32)
        c.all_reduce(x)  # the Python path learns the dtype; later calls take the C path
        tracker, thread, out = self.in_flight(c, lambda: c.all_reduce(x))
        if FAST:
            self.assertEqual(c._fast_calls, 1)  # counted in the extension
        self.assertEqual(c.abort(timeout=0.1), "aborted")
        self.finish(c, tracker, thread, out, handle)
        self.assertEqual(c._fast_calls, 0)

    def test_symmetric_buffer_closed_from_two_threads(self):
        c = Communicator(1, 0, ncclshim.unique_id())
        self.addCleanup(c.abort)
        buf = c.symmetric(64)
        tracker = Tracker(self, "ncclshim_symmem_free")
        first = threading.Thread(target=buf.close)
        first.start()
        self.assertTrue(tracker.entered.wait(10))
        second = threading.Thread(target=buf.close)
        second.start()
        second.join(0.2)
        tracker.release()
        first.join(10)
        second.join(10)
        self.assertEqual(tracker.violations, [])
        self.assertEqual(len(tracker.freed), 1)


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


def collective_counts():
    names = ("ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather",
             "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd",
             "ncclCommInitRankConfig", "ncclCommInitRank")
    return {n: count(n) for n in names}


class Refusals(Live):
    """Every wrong argument raises TypeError, ValueError or BufferError naming it, and NCCL is
    never called."""

    def setUp(self):
        super().setUp()
        self.c = Communicator(4, 1, ncclshim.unique_id())
        self.addCleanup(self.c.abort)
        self.before = collective_counts()

    def refused(self, error, text, call):
        with self.assertRaisesRegex(error, text):
            call()
        self.assertEqual(collective_counts(), self.before, text)

    def cai(self, **fields):
        d = {"data": (0x1000, False), "shape": (4,), "typestr": "<f4", "strides": None,
             "version": 3}
        d.update(fields)
        for k in [k for k, v in fields.items() if v is KeyError]:
            del d[k]
        return types.SimpleNamespace(__cuda_array_interface__=d)

    def test_integers_past_their_c_type(self):
        c, uid, a = self.c, ncclshim.unique_id(), Device(0x1000, 4)
        for call, error, text in (
                (lambda: Communicator(2 ** 32 + 1, 0, uid), ValueError,
                 r"nranks is 4294967297; it must be in \[1, 2147483647\]"),
                (lambda: Communicator(2 ** 31, 0, uid), ValueError, "nranks is 2147483648"),
                (lambda: Communicator(2, 2 ** 32, uid), ValueError, "rank is 4294967296"),
                (lambda: Communicator(2, -1, uid), ValueError, "rank is -1"),
                (lambda: Communicator(True, 0, uid), TypeError, "nranks must be an int"),
                (lambda: Communicator(2.0, 0, uid), TypeError, "nranks must be an int"),
                (lambda: c.send(a, peer=2 ** 32 + 1, stream=0), ValueError,
                 r"peer is 4294967297; a rank of this communicator is in \[0, 4\)"),
                (lambda: c.recv(a, peer=4, stream=0), ValueError, "peer is 4"),
                (lambda: c.send(a, peer=True, stream=0), TypeError, "peer must be an int"),
                (lambda: c.broadcast(a, root=2 ** 32, stream=0), ValueError, "root is 4294967296"),
                (lambda: c.reduce(a, root=-1, stream=0), ValueError, "root is -1"),
                (lambda: c.all_reduce(a, op=2 ** 32 + 2, stream=0), ValueError,
                 "op is 4294967298"),
                (lambda: c.all_reduce(a, op=-1, stream=0), ValueError, "op is -1"),
                (lambda: c.all_reduce(a, op=True, stream=0), TypeError, "op must be an int"),
                (lambda: c.all_reduce(a, stream=2 ** 64 + 5), ValueError,
                 "stream is 18446744073709551621"),
                (lambda: c.all_reduce(a, stream=2 ** 70), ValueError, "stream is 1180591620"),
                (lambda: c.all_reduce(a, stream=-1), ValueError, "stream is -1"),
                (lambda: Buffer(0x1000, 2 ** 64 + 4, "float32"), ValueError,
                 "Buffer: count is 18446744073709551620"),
                (lambda: Buffer(0x1000, 2 ** 62, "float32"), ValueError,
                 "run past the 64-bit address space"),
                (lambda: Buffer(-1, 4, "float32"), ValueError, "Buffer: ptr is -1"),
                (lambda: Buffer(0, 4, "float32"), ValueError, "NULL data pointer"),
                (lambda: c.symmetric(2 ** 64 + 16), ValueError, "nbytes is 18446744073709551632"),
                (lambda: c.symmetric(0), ValueError, "nbytes is 0"),
                (lambda: c.record_graph(0, "decode", 2 ** 32 + 1), ValueError,
                 "ops is 4294967297"),
                (lambda: c.record_graph(0, b"x", 1), TypeError, "label must be a str, not bytes"),
                (lambda: c.record_graph(2 ** 64, "x", 1), ValueError, "stream is")):
            self.refused(error, text, call)

        # an integer type's __index__: an int's value is its own, a non-int answer refused
        class Odd(int):
            def __index__(self):
                return 0.5

        class Answers:
            def __init__(self, answer):
                self.answer = answer

            def __index__(self):
                if isinstance(self.answer, type):
                    raise self.answer("from __index__")
                return self.answer
        for call, error, text in (
                (lambda: c.broadcast(a, root=Answers(0.5), stream=0), TypeError,
                 "__index__ returned non-int"),
                (lambda: c.send(a, peer=Answers("1"), stream=0), TypeError, "non-int"),
                (lambda: c.all_reduce(a, op=Odd(2 ** 31), stream=0), ValueError,
                 "op is 2147483648"),
                (lambda: Buffer(0x1000, Answers(1.5), "float32"), TypeError, "non-int"),
                (lambda: c.reduce(a, root=Answers(ZeroDivisionError), stream=0),
                 ZeroDivisionError, "from __index__")):
            self.refused(error, text, call)
        c.broadcast(a, root=Odd(3), stream=0)
        c.reduce(a, root=Answers(2), op=Odd(1), stream=0)
        self.assertEqual(last_call()[1][3:6], [7, 1, 2])
        self.assertEqual(count("ncclBroadcast"), 1)
        c.all_reduce(a, op=4, stream=2 ** 64 - 1)  # the edges themselves pass
        self.assertEqual(last_call()[1][4:], [4, c.raw, 2 ** 64 - 1])

    def test_buffer_subclass_fields_checked(self):
        def lying(field, value):
            class Lying(Buffer):
                __slots__ = ()

                def __getattribute__(self, name):
                    return value if name == field else object.__getattribute__(self, name)
            return Lying(0x1000, 4, "float32")
        for field, value, error, text in (
                ("count", 2 ** 70, ValueError, r"send: Lying.count is 1180591620717411303424"),
                ("count", True, TypeError, "send: Lying.count must be an int, not bool"),
                ("ptr", -1, ValueError, r"send: Lying.ptr is -1"),
                ("ptr", 2 ** 64 - 4, ValueError, "64-bit address space"),
                ("dtype", 99, TypeError, "99 is not an ncclDataType_t")):
            self.refused(error, text, lambda: self.c.all_reduce(lying(field, value), stream=0))

        class Plain(Buffer):
            __slots__ = ()
        self.c.all_reduce(Plain(0x1000, 4, "float16"), stream=0)
        self.assertEqual(last_call()[1][:4], [0x1000, 0x1000, 4, 6])

    def test_shapes_and_sizes(self):
        for shape, error, text in (((-4,), ValueError, r"shape \(-4,\) holds -4"),
                                   ((2 ** 62, 4), ValueError, "64-bit address space"),
                                   ((4.0,), ValueError, "not an int"),
                                   (4, TypeError, r"\['shape'\] must be a tuple")):
            self.refused(error, text, lambda: self.c.all_reduce(self.cai(shape=shape), stream=0))

    def test_every_array_interface_field(self):
        c, ok = self.c, Device(0x2000, 4)
        for cai, error, text in (
                (self.cai(data=(0x1000, True)), BufferError,
                 "send: SimpleNamespace is read-only and NCCL writes this buffer"),
                (self.cai(mask=Device(0x3000, 4)), BufferError, "masked array"),
                (self.cai(typestr=">f4"), ValueError, "big-endian"),
                (self.cai(typestr="<c8"), TypeError, "no data type for typestr '<c8'"),
                (self.cai(typestr=4), TypeError, r"\['typestr'\] must be a str"),
                (self.cai(data="0x1000"), TypeError, r"\['data'\] must be \(int pointer"),
                (self.cai(data=(b"\x00\x10", False)), TypeError, r"\['data'\]"),
                (self.cai(data=(0x1000, 0)), TypeError, r"\['data'\]"),
                (self.cai(data=KeyError), TypeError, r"\['data'\]"),
                (self.cai(data=(0, False)), ValueError, "NULL data pointer with 4 elements"),
                (self.cai(data=(2 ** 64, False)), ValueError, "is not an address"),
                (self.cai(version=KeyError), TypeError, r"\['version'\] must be an int"),
                (self.cai(version=4), ValueError, "version 4"),
                (self.cai(stream=0), ValueError, "stream 0 is not a stream.*never 0"),
                (self.cai(stream=-1), ValueError, "stream -1 is not a stream"),
                (self.cai(stream=2 ** 64), ValueError, "stream 18446744073709551616"),
                (self.cai(stream=True), TypeError, r"\['stream'\] must be None or an int"),
                (self.cai(stream="1"), TypeError, r"\['stream'\]"),
                (self.cai(strides=(4, 4)), TypeError, "strides"),
                (self.cai(strides=(8,)), BufferError, "not contiguous"),
                (types.SimpleNamespace(__cuda_array_interface__=[1]), TypeError, "not a dict"),
                (types.SimpleNamespace(__cuda_array_interface__=5), TypeError, "not a dict")):
            self.refused(error, text, lambda: c.all_reduce(cai, stream=0))
        # read-only: refused where NCCL writes, taken where it reads
        self.refused(BufferError, "recv: .* read-only", lambda: c.all_reduce(
            ok, self.cai(data=(0x1000, True)), stream=0))
        c.all_reduce(self.cai(data=(0x1000, True)), ok, stream=0)
        self.assertEqual(last_call()[1][:3], [0x1000, 0x2000, 4])
        for producer in (None, 1, 2, 2 ** 64 - 1):  # checked, not synchronized with
            c.all_reduce(self.cai(stream=producer), stream=9)
            self.assertEqual(last_call()[1][-1], 9)
        c.all_reduce(self.cai(typestr="|u1", data=(0x5000, False)), stream=0)
        c.all_reduce(self.cai(typestr=">u1", data=(0x5000, False), version=0), stream=0)
        self.assertEqual(last_call()[1][:4], [0x5000, 0x5000, 4, 1])

    def test_streams_only_from_streams(self):
        c, a = self.c, Device(0x1000, 4)

        class Lying:
            cuda_stream = "0x1000"

        class CuPyLying:
            ptr = b"0x10"
        CuPyLying.__module__ = "cupy.cuda.stream"
        for s, text in ((Buffer(0x7000, 1, "float32"), "Buffer is not a stream"),
                        (Lying(), "Lying.cuda_stream is '0x1000', not a stream handle"),
                        (CuPyLying(), "CuPyLying.ptr is b'0x10'"),
                        ("s", "str is not a stream"), (True, "bool is not a stream"),
                        (1.0, "float is not a stream"), (a, "SimpleNamespace|Device")):
            self.refused(TypeError, text, lambda: c.all_reduce(a, stream=s))

        class Protocol:
            def __cuda_stream__(self):
                return (0, 0x4545)
        c.all_reduce(a, stream=Protocol())
        self.assertEqual(last_call()[1][-1], 0x4545)

    def test_dlpack_read_only_and_pinned_host(self):
        capsule_of = DLPack.capsule_of  # self unused
        self.refused(BufferError, "recv: .*read-only", lambda: self.c.all_reduce(
            Device(0x2000, 12), capsule_of(self, 2, read_only=True), stream=0))
        self.refused(BufferError, "DLPack device type 3", lambda: self.c.all_reduce(
            capsule_of(self, 3), stream=0))
        self.c.all_reduce(capsule_of(self, 2, read_only=True), Device(0x2000, 12), stream=0)
        self.assertEqual(last_call()[1][:3], [0x9010, 0x2000, 12])

    def test_messages_name_the_argument(self):
        uid = ncclshim.unique_id()
        for call, error, text in (
                (lambda: Communicator(1, 0, uid, timeout=float("nan")), ValueError,
                 "timeout must be a finite number of seconds >= 0 .*not nan"),
                (lambda: Communicator(1, 0, uid, timeout=float("inf")), ValueError,
                 "timeout .* not inf"),
                (lambda: Communicator(1, 0, uid, timeout=10 ** 400), ValueError,
                 "timeout .* not inf"),
                (lambda: ncclshim.group(self.c, timeout=-10 ** 400), ValueError,
                 "timeout .* not -inf"),
                (lambda: Communicator(1, 0, uid, timeout="1"), TypeError,
                 "timeout must be a number of seconds, not str"),
                (lambda: Communicator(1, 0, uid, mode=["blocking"]), ValueError,
                 "mode must be one of"),
                (lambda: ncclshim.group(self.c, timeout=None), TypeError, "timeout must be"),
                (lambda: ncclshim.Watchdog(interval=-1), ValueError, "interval"),
                (lambda: ncclshim.Watchdog(interval=0), ValueError, "interval must be 0.001"),
                (lambda: ncclshim.Watchdog(on_failure=5), TypeError,
                 "on_failure must be None or a callable"),
                (lambda: self.c.close(timeout=float("nan")), ValueError, "timeout"),
                (lambda: self.c.watch(object(), 1), TypeError, "dog must be a Watchdog"),
                (lambda: ncclshim.group(self.c, timeout=-1), ValueError, "timeout"),
                (lambda: self.c.all_reduce(object(), stream=0), TypeError,
                 "send: object is not a buffer"),
                (lambda: self.c.all_gather(Device(0x1000, 4), None, stream=0), TypeError,
                 "recv buffer missing")):
            self.refused(error, text, call)
        self.assertEqual(self.c.state, "ready")

    def test_bool_reductions_are_torchs(self):
        torch = mock_torch()
        sys.modules["torch"] = torch
        self.addCleanup(sys.modules.pop, "torch")
        torch.bool = torch.dtype("bool", 1)
        c = self.c
        for make in (lambda p: torch.Tensor(p, 16, torch.bool),
                     lambda p: types.SimpleNamespace(__cuda_array_interface__={
                         "data": (p, False), "shape": (16,), "typestr": "|b1", "version": 3})):
            for op, nccl_op in (("sum", 2), ("prod", 3), ("max", 2), ("min", 3), (0, 2),
                                (1, 3)):
                for _ in range(2):  # the first call learns the dtype; the second is the fast one
                    c.all_reduce(make(0x1000), make(0x2000), op=op, stream=3)
                    self.assertEqual(last_call(), ("ncclAllReduce", [0x1000, 0x2000, 16, 1,
                                                                     nccl_op, c.raw, 3]), op)
                big = torch.Tensor(0x4000, 64, torch.bool)
                c.reduce_scatter(big, make(0x2000), op=op, stream=3)
                self.assertEqual(last_call()[1][2:5], [16, 1, nccl_op])
            self.before = collective_counts()
            for op in ("avg", 4, 5):
                self.refused(ValueError, "not defined on bool buffers",
                             lambda: c.all_reduce(make(0x1000), op=op, stream=3))
            c.broadcast(make(0x1000), stream=3)  # no reduction: plain bytes
            self.assertEqual(last_call()[1][3], 1)
        self.before = collective_counts()
        self.refused(TypeError, "recv has NCCL type 1; this call needs bool",
                     lambda: c.all_reduce(torch.Tensor(0x1000, 16, torch.bool),
                                          Device(0x2000, 16, "|u1"), stream=3))


class Groups(Live):
    """A group is checked before ncclGroupStart and always ended once started."""

    def balanced(self):
        self.assertEqual(count("ncclGroupStart"), count("ncclGroupEnd"))

    def test_refused_before_the_start(self):
        with Communicator(1, 0, ncclshim.unique_id()) as a:
            closed = Communicator(1, 0, ncclshim.unique_id())
            closed.close()
            with self.assertRaisesRegex(TypeError, "group: argument 1 is a str"):
                with ncclshim.group("notacomm"):
                    pass
            with self.assertRaisesRegex(NcclshimError, "closed"):
                with ncclshim.group(a, closed):
                    pass
            self.assertEqual(count("ncclGroupStart"), 0)
            self.assertEqual(a._groups, 0)

    def test_ended_whatever_raises_inside(self):
        with Communicator(1, 0, ncclshim.unique_id()) as a:
            with self.assertRaises(KeyError):
                with a.group():
                    a.all_reduce(Device(0x1000, 4), stream=0)
                    raise KeyError("engine")
            self.balanced()
            b = Communicator(1, 0, ncclshim.unique_id())
            with ncclshim.group(a, b):
                b.close()  # closed inside: the group still ends, for what remains
            self.balanced()
            self.assertEqual((a._groups, a.state), (0, "ready"))
            with self.assertRaisesRegex(ValueError, "op 'x'"):
                with a.group():
                    a.all_reduce(Device(0x1000, 4), op="x", stream=0)
            self.balanced()
            a.all_reduce(Device(0x1000, 4), stream=0)  # not deferred: no group is open
            self.assertEqual(last_call()[0], "ncclAllReduce")


class Agreement(Live):
    """Random calls, valid and not: what reaches NCCL is exactly what was asked, and a wrong
    argument raises before NCCL. With the extension, each call is also made through the pure
    Python method, and both must answer alike (the same exception and message, or the same
    arguments in NCCL)."""
    CALLS = 3000

    def setUp(self):
        super().setUp()
        self.torch = mock_torch()
        sys.modules["torch"] = self.torch
        self.addCleanup(sys.modules.pop, "torch")
        self.torch.bool = self.torch.dtype("bool", 1)

    def outcome(self, fn, *args, **kw):
        before = collective_counts()
        try:
            fn(*args, **kw)
        except (TypeError, ValueError, BufferError) as e:
            self.assertEqual(collective_counts(), before, e)  # refused before NCCL
            return (type(e), str(e))
        return last_call()

    def test_random_calls(self):
        t, rng = self.torch, random.Random(39)
        dtypes = [(t.float32, 7), (t.bfloat16, 9), (t.bool, 1)]
        c = Communicator(4, 2, ncclshim.unique_id())
        self.addCleanup(c.abort)
        stream_type = type("Stream", (), {"__init__": lambda s, h: setattr(s, "cuda_stream", h)})
        stream_type.__module__ = "torch.cuda"
        kinds = {"all_reduce": 1, "broadcast": 1, "reduce": 1, "all_gather": 4,
                 "reduce_scatter": 4, "send": 0, "recv": 0}
        checked = 0
        for i in range(self.CALLS):
            kind = rng.choice(list(kinds))
            dt, code = rng.choice(dtypes)
            n = rng.choice([0, 1, 3, 1024])
            scale = kinds[kind]
            a = t.Tensor(0x10000 + 64 * i, n, dt)
            b = t.Tensor(0x90000 + 64 * i, n * max(scale, 1), dt)
            op, nccl_op = rng.choice([("sum", 0), ("prod", 1), ("max", 2), ("min", 3),
                                      ("avg", 4), (2, 2)])
            root = rng.choice([0, 1, 3])
            handle = rng.choice([0, 7, 2 ** 64 - 1])
            stream = rng.choice([handle, stream_type(handle)])
            bad = rng.random() < 0.4
            if bad:  # one argument made wrong
                what = rng.choice(["op", "root", "stream", "count", "dtype", "cpu", "strided"])
                if what == "op":
                    op = rng.choice([2 ** 31, -1, True, "median", 1.5, None])
                elif what == "root":
                    root = rng.choice([4, -1, 2 ** 32, True, 1.0, "0"])
                elif what == "stream":
                    stream = rng.choice([2 ** 64, -5, "s", 1.0, stream_type("x"),
                                         Buffer(0x10, 1, "float32")])
                elif what == "count":
                    b = t.Tensor(0x90000, n * max(scale, 1) + 1, dt)
                elif what == "dtype":
                    b = t.Tensor(0x90000, n * max(scale, 1), t.float32 if dt is not t.float32
                                 else t.bfloat16)
                elif what == "cpu":
                    a = t.Tensor(0x10000, n, dt, cuda=False)
                else:
                    a = t.Tensor(0x10000, n, dt, contiguous=False)
            if kind == "reduce_scatter":  # send holds nranks x recv's count
                a, b = t.Tensor(a.data_ptr(), 4 * a.numel(), a.dtype, a.is_cuda,
                                a.contiguous), t.Tensor(b.data_ptr(), n + (b.numel() != 4 * n),
                                                        b.dtype)
            args, kw = self.arguments(kind, a, b, op, root, stream)
            got = self.outcome(getattr(c, kind), *args, **kw)
            if FAST:  # the extension against the Python method it hands others to
                again = self.outcome(getattr(ncclshim.comm._PyCalls, kind), c, *args, **kw)
                self.assertEqual(got, again, (kind, args, kw))
            if isinstance(got[0], type):
                if not bad:  # only avg on bool is refused of the valid choices
                    self.assertEqual((dt, op, got[0]), (t.bool, "avg", ValueError), got)
                continue
            if bad and (what == "stream" or what in ("cpu", "strided") or
                        what in ("count", "dtype") and kind not in ("send", "recv") or
                        what == "op" and kind in ("all_reduce", "reduce", "reduce_scatter") or
                        what == "root" and kind in ("broadcast", "reduce", "send", "recv")):
                self.fail("accepted: %s %s %s -> %s" % (kind, args, kw, got))
            self.assertEqual(got, self.expected(kind, a, b, n, code, op if not isinstance(
                op, str) else nccl_op, root, handle, c.raw), (kind, args, kw))
            checked += 1
        self.assertGreater(checked, self.CALLS // 3)

    @staticmethod
    def arguments(kind, a, b, op, root, stream):
        if kind in ("send", "recv"):
            return (a,), {"peer": root, "stream": stream}
        kw = {"stream": stream}
        if kind in ("all_reduce", "reduce", "reduce_scatter"):
            kw["op"] = op
        if kind in ("broadcast", "reduce"):
            kw["root"] = root
        return (a, b), kw

    def expected(self, kind, a, b, n, code, op, root, handle, raw):
        if code == 1 and kind in ("all_reduce", "reduce", "reduce_scatter"):
            op = {0: 2, 1: 3, 2: 2, 3: 3}[op]
        ap, bp = a.data_ptr(), b.data_ptr()
        return {"all_reduce": ("ncclAllReduce", [ap, bp, n, code, op, raw, handle]),
                "broadcast": ("ncclBroadcast", [ap, bp, n, code, root, raw, handle]),
                "reduce": ("ncclReduce", [ap, bp, n, code, op, root, raw, handle]),
                "all_gather": ("ncclAllGather", [ap, bp, n, code, raw, handle]),
                "reduce_scatter": ("ncclReduceScatter", [ap, bp, n, code, op, raw, handle]),
                "send": ("ncclSend", [ap, n, code, root, raw, handle]),
                "recv": ("ncclRecv", [ap, n, code, root, raw, handle])}[kind]


class CollConfigs(Live):
    """On NCCL 2.32.3: config= calls the ...Config entry point with the config's address, its
    struct of NCCL's size, magic and layout; ncclSetEncryption gets its config."""

    def test_config_reaches_the_config_entry(self):
        cfg = ncclshim.CollConfig(max_ctas=8, alg_selection="ring", profiler_tag=2 ** 64 - 1,
                                  launch_completion_event=types.SimpleNamespace(cuda_event=0x77))
        a, b, big = Device(0x1000, 4), Device(0x2000, 4), Device(0x3000, 16)
        with Communicator(4, 0, ncclshim.unique_id()) as c:
            s, raw = 9, c.raw
            for call, want in (
                    (lambda: c.all_reduce(a, b, op="max", stream=s, config=cfg),
                     ("ncclAllReduceConfig", [0x1000, 0x2000, 4, 7, 2, raw, s])),
                    (lambda: c.broadcast(a, b, root=3, stream=s, config=cfg),
                     ("ncclBroadcastConfig", [0x1000, 0x2000, 4, 7, 3, raw, s])),
                    (lambda: c.reduce(a, None, root=1, op="min", stream=s, config=cfg),
                     ("ncclReduceConfig", [0x1000, 0x1000, 4, 7, 3, 1, raw, s])),
                    (lambda: c.all_gather(a, big, stream=s, config=cfg),
                     ("ncclAllGatherConfig", [0x1000, 0x3000, 4, 7, raw, s])),
                    (lambda: c.reduce_scatter(big, a, stream=s, config=cfg),
                     ("ncclReduceScatterConfig", [0x3000, 0x1000, 4, 7, 0, raw, s])),
                    (lambda: c.all_to_all(big, Device(0x4000, 16), stream=s, config=cfg),
                     ("ncclAlltoAllConfig", [0x3000, 0x4000, 4, 7, raw, s])),
                    (lambda: c.gather(a, big, root=0, stream=s, config=cfg),
                     ("ncclGatherConfig", [0x1000, 0x3000, 4, 7, 0, raw, s])),
                    (lambda: c.scatter(big, a, root=0, stream=s, config=cfg),
                     ("ncclScatterConfig", [0x3000, 0x1000, 4, 7, 0, raw, s]))):
                call()
                name, args = last_call()
                self.assertEqual((name, args[:-1]), want)
                self.assertEqual(args[-1], cfg.address)
                st = ncclshim._clib.functions().STRUCTS["ncclshim_coll_config_t"].from_address(
                    args[-1])
                self.assertEqual((st.size, st.magic, st.version, st.maxCTAs, st.minCTAs,
                                  st.algSelection, st.forceAlgSelection, st.userProfilerTag,
                                  st.launchCompletionEvent),
                                 (72, 0xcafebeef, 23203, 8, -2 ** 31, b"ring", 1, 2 ** 64 - 1,
                                  0x77))
            c.all_reduce(a, b, stream=s)  # without config: the plain entry, unchanged
            self.assertEqual(last_call()[0], "ncclAllReduce")

    def test_config_refused_before_nccl(self):
        c = Communicator(1, 0, ncclshim.unique_id())
        self.addCleanup(c.close)
        before = collective_counts()
        for kw, error, text in ((dict(max_ctas=2 ** 31), ValueError, "max_ctas is 2147483648"),
                                (dict(min_ctas=-1), ValueError, "min_ctas is -1"),
                                (dict(profiler_tag=2 ** 64), ValueError, "profiler_tag"),
                                (dict(alg_selection=b"ring"), TypeError, "alg_selection must"),
                                (dict(force_alg_selection=1), TypeError, "must be a bool"),
                                (dict(launch_completion_event="e"), TypeError, "event"),
                                (dict(launch_completion_event=types.SimpleNamespace(
                                    cuda_event="e")), TypeError, "not an event handle")):
            with self.assertRaisesRegex(error, text):
                ncclshim.CollConfig(**kw)
        with self.assertRaisesRegex(TypeError, "config must be an ncclshim.CollConfig"):
            c.all_reduce(Device(0x1000, 4), stream=0, config={"max_ctas": 2})
        with self.assertRaises(AttributeError):  # NCCL dereferences it
            ncclshim.CollConfig(max_ctas=4).address = 0xdead0
        self.assertEqual(collective_counts(), before)

        class Lying(ncclshim.CollConfig):
            address = 0xdead0
        lying = Lying(max_ctas=3)
        c.all_reduce(Device(0x1000, 4), stream=0, config=lying)  # its own struct, not 0xdead0
        self.assertEqual(last_call()[1][-1], ctypes.addressof(lying._struct))

    def test_set_encryption(self):
        clib, seen = ncclshim.collconfig._clib, []
        real = clib.nccl_function("ncclSetEncryption")

        def spy(address):  # the config as NCCL sees it during the call
            st = clib.functions().STRUCTS["ncclshim_encryption_config_t"].from_address(address)
            seen.append((st.size, st.magic, st.version, st.mode, st.psk))
            return real(address)
        nccl_function = clib.nccl_function
        clib.nccl_function = lambda name: spy if name == "ncclSetEncryption" else \
            nccl_function(name)
        try:
            ncclshim.set_encryption("psk", psk="secret")
        finally:
            clib.nccl_function = nccl_function
        self.assertEqual(seen, [(32, 0xcafebeef, 23203, 1, b"secret")])
        self.assertEqual(last_call()[0], "ncclSetEncryption")
        ncclshim.set_encryption("none")
        for args, kw, text in ((("psk",), {}, "psk is needed"), (("rsa",), {"psk": "k"}, "mode"),
                               (("none",), {"psk": "k"}, "only there"),
                               (("psk",), {"psk": "a\0b"}, "NUL")):
            with self.assertRaisesRegex(ValueError, text):
                ncclshim.set_encryption(*args, **kw)
        self.assertEqual(count("ncclSetEncryption"), 2)


class NoCollConfig(Live):
    """Before NCCL 2.32.3: config= and set_encryption raise at once, naming the release."""

    def test_refused_naming_the_release(self):
        cfg = ncclshim.CollConfig(max_ctas=2)
        with Communicator(1, 0, ncclshim.unique_id()) as c:
            for name, call in (
                    ("ncclAllReduceConfig", lambda: c.all_reduce(Device(1, 4), stream=0,
                                                                 config=cfg)),
                    ("ncclAllGatherConfig", lambda: c.all_gather(Device(1, 4), Device(2, 4),
                                                                 stream=0, config=cfg)),
                    ("ncclSetEncryption", lambda: ncclshim.set_encryption("none"))):
                before = collective_counts()
                with self.assertRaises(NcclUnavailable) as cm:
                    call()
                self.assertRegex(str(cm.exception), "%s came with NCCL 2.32.3; the loaded "
                                 "NCCL 2.28.9 .* lacks it" % name)
                self.assertEqual(collective_counts(), before)
                self.assertEqual(count(name), 0)
            c.all_reduce(Device(1, 4), stream=0)  # without config: as before


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


def check_path():
    """The run is on the path test_comm.py asked for: never the pure path twice."""
    fast = ncclshim._clib.fast_module()
    if (fast is not None) != FAST:
        sys.exit("comm_checks.py: asked for the %s path, the package has %s" % (
            os.environ.get("COMM_CHECKS_PATH"), fast))
    if FAST and ncclshim.comm.Communicator.__mro__[1] is not fast.Calls:
        sys.exit("comm_checks.py: the extension's Calls is not Communicator's first base")


if __name__ == "__main__":
    check_path()
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:])

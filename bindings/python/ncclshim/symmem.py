"""Symmetric memory (ncclshim/symmem.h) as a buffer object: ncclMemAlloc'ed device memory
registered as a symmetric window on a communicator (NCCL 2.28+), usable wherever a buffer is
(it has __cuda_array_interface__: torch.as_tensor(buf, device="cuda"), cupy.asarray(buf), and
the collectives take it directly, or view(dtype) for a typed one).

    with comm.symmetric(1 << 20) as buf:        # collective: same size on every rank
        x = buf.view("float32")                  # ncclshim.Buffer over it
        comm.all_reduce(x)
"""
import ctypes
import threading
from typing import Any, Optional

from . import _args, _clib
from .buffers import Buffer, dtype_code, element_size, stream as _stream
from .errors import NcclshimError


class SymmetricBuffer(_clib.Owner):
    def __init__(self, comm: Any, nbytes: int, stream: Any = None) -> None:
        nbytes = _args.integer(nbytes, "nbytes", 1, _args.SIZE_MAX)
        s = _stream(stream) if stream is not None else 0
        out = ctypes.c_void_p()
        self._mem = None
        self._freeing = threading.Lock()  # one close() at a time: the handle is freed once
        with comm._use() as c:  # a call in flight on the communicator: its handle stays
            _clib.check(_clib.lib().ncclshim_symmem_alloc(c, nbytes, s, comm._ms,
                                                          ctypes.byref(out)),
                        "ncclshim_symmem_alloc")
        lib_ = _clib.lib()
        self._mem, self._comm = out.value, comm
        self.ptr = lib_.ncclshim_symmem_ptr(self._mem)
        self.nbytes = lib_.ncclshim_symmem_size(self._mem)
        self.window = lib_.ncclshim_symmem_window(self._mem)

    def _live(self, call):
        if self._mem is None:
            raise NcclshimError("the symmetric buffer is freed", call=call)

    @property
    def __cuda_array_interface__(self):
        self._live("SymmetricBuffer")
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3, "strides": None}

    def view(self, dtype: Any, count: Optional[int] = None) -> Buffer:
        """An ncclshim.Buffer of `count` elements (default: as many as fit) of dtype."""
        self._live("SymmetricBuffer.view")  # a view of freed memory would reach NCCL
        code = dtype_code(dtype)
        fit = self.nbytes // element_size(code)
        count = fit if count is None else _args.integer(count, "count", 0, _args.SIZE_MAX)
        if count > fit:
            raise ValueError("%d elements do not fit in %d bytes" % (count, self.nbytes))
        return Buffer(self.ptr, count, code)

    def close(self, timeout: Optional[float] = None) -> None:
        """Deregister (collective, bounded) and free. Idempotent, and safe from any thread:
        a second close() waits for the first one's."""
        if self._mem is None:
            return
        ms = _clib.milliseconds(self._comm.timeout if timeout is None else timeout)
        with self._freeing:
            if self._mem is None:
                return
            _clib.check(_clib.lib().ncclshim_symmem_free(self._mem, ms),
                        "ncclshim_symmem_free")
            self._mem = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

"""Communicators for Python engines: what a pynccl wrapper does by hand, over libncclshim.

    uid = ncclshim.unique_id()                    # bytes; rank 0 hands it to the others
    with ncclshim.Communicator(nranks, rank, uid, mode="split-blocking") as comm:
        comm.all_reduce(x)                        # in place, on torch's current stream
        comm.all_reduce(x, y, op="max", stream=s) # s: torch/CuPy stream or int handle
        with comm.group():
            comm.send(a, peer=1); comm.recv(b, peer=1)

Modes (docs/python.md has what each detects):
    "blocking"        NCCL's default: init and collectives block inside NCCL.
    "nonblocking"     every step returns at once and is waited for with a bound (NCCL 2.14+).
    "split-blocking"  bounded init, then blocking collectives (NCCL 2.18.1+): the default;
                      watch() adds per-operation deadlines without per-call waits.
Every wait has a bound (timeout, seconds). A collective the loaded NCCL lacks raises
NcclUnavailable at once, naming the release that brought it. The call path allocates no
device memory, synchronizes nothing and copies nothing, so it can be captured in a CUDA graph."""
import ctypes
import linecache
import sys

from . import _clib
from .buffers import PAIRS as _P, READERS as _R, STREAMS as _S, current as _current, \
    pair as _pair, _pair_torch, reader as _reader, stream as _stream
from .buffers import TORCH_CODES as _TORCH_CODES, _pair_any  # noqa: F401 (_PAIR_CALL's)
from .errors import NcclshimError

MODES = {"nonblocking": 0, "blocking": 1, "split-blocking": 2}
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


class _Ops(dict):
    """Every spelling of a reduction seen (str, torch's ReduceOp, ...), read on the call
    path; one not seen yet goes through _op, which refuses an unknown one."""

    def __missing__(self, op):
        return _op(op)


_OPC = _Ops(_OPS)
_IN_PROGRESS = 7
# Call names as bytes that live as long as the module: ncclshim_comm_record keeps the pointer.
_NAMES = {n: n.encode() for n in (
    "ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
    "ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter")}


def _op(op):
    if type(op) is int:
        return op
    code = dict.get(_OPC, op)
    if code is None:
        name = str(op).rsplit(".", 1)[-1].lower()  # "sum", torch's ReduceOp.SUM, "ncclSum"
        code = _OPS.get(name[4:] if name.startswith("nccl") else name)
        if code is None:
            raise ValueError("unknown reduction %r: sum, prod, max, min, avg or an "
                             "ncclRedOp_t" % (op,))
        _OPC[op] = code
    return code


def _in_place(buf):
    """A pair reader's answer for one buffer that is both send and recv."""
    p, n, dt, fw = (_R.get(type(buf)) or _reader(buf))(buf)
    return p, p, n, dt, fw


def unique_id():
    """ncclGetUniqueId, as the 128 bytes every rank passes to Communicator."""
    f = _clib.functions()
    uid = f.ncclUniqueId()
    r = _clib.nccl_function("ncclGetUniqueId")(ctypes.byref(uid))
    if r != 0:
        _clib.check(_clib.lib().ncclshim_nccl_check(_clib.nccl(), r, b"ncclGetUniqueId"),
                    "ncclGetUniqueId")
    return ctypes.string_at(ctypes.addressof(uid), ctypes.sizeof(uid))


class _Group:
    """ncclGroupStart on entry; on exit ncclshim_comm_group_end, waiting (bounded) for the
    communicators that took part."""

    def __init__(self, comms, timeout):
        self.comms, self.timeout = comms, timeout

    def __enter__(self):
        r = _clib.nccl_function("ncclGroupStart")()
        if r != 0:
            _clib.check(_clib.lib().ncclshim_nccl_check(_clib.nccl(), r, b"ncclGroupStart"),
                        "ncclGroupStart")
        for c in self.comms:
            c._groups += 1
        return self

    def __exit__(self, kind, value, tb):
        for c in self.comms:
            c._groups -= 1
        handles = (ctypes.c_void_p * max(1, len(self.comms)))(
            *[c._handle() for c in self.comms])
        status = _clib.lib().ncclshim_comm_group_end(None, handles, len(self.comms),
                                                     _clib.milliseconds(self.timeout))
        pending = [(c, c._pending) for c in self.comms if not c._groups and c._pending]
        for c, _ in pending:
            c._pending = []
        if kind is None:
            _clib.check(status, "ncclGroupEnd")
            for c, ops in pending:  # NCCL enqueued them at the group's end: mark them now
                for op in ops:
                    c._record(*op)
        return False


def group(*comms, timeout=60.0):
    """ncclGroupStart/End as a context manager over these communicators (each waited for,
    all within one timeout, when non-blocking)."""
    return _Group(list(comms), timeout)


class Communicator:
    """Rank `rank` of an `nranks`-rank communicator made from `uid` (unique_id()'s bytes), on
    the calling thread's current CUDA device. timeout (seconds) bounds every wait: the init
    (except in "blocking" mode, where NCCL waits by itself), non-blocking operations, group
    ends, close() and abort()."""

    def __init__(self, nranks, rank, uid, mode="split-blocking", timeout=60.0):
        if mode not in MODES:
            raise ValueError("mode must be one of %s" % ", ".join(MODES))
        if not isinstance(uid, (bytes, bytearray)):
            raise TypeError("uid must be the bytes unique_id() returned")
        lib_, f = _clib.lib(), _clib.functions()
        if len(uid) != ctypes.sizeof(f.ncclUniqueId):
            raise ValueError("uid has %d bytes; a unique id has %d"
                             % (len(uid), ctypes.sizeof(f.ncclUniqueId)))
        _clib.require_nccl()
        self.nranks, self.rank, self.mode, self.timeout = nranks, rank, mode, timeout
        self._ms = _clib.milliseconds(timeout)
        self._c = None
        self._fast = None  # the ncclComm_t while ready and unwatched: no C call to get it
        self._watched = False
        self._groups = 0
        self._pending = []  # operations to record with the watchdog when the group ends
        self._fns = {}
        ident = f.ncclUniqueId.from_buffer_copy(bytes(uid))
        options = f.ncclshim_comm_options(size=ctypes.sizeof(f.ncclshim_comm_options),
                                          blocking=MODES[mode])
        out = ctypes.c_void_p()
        _clib.check(lib_.ncclshim_comm_init(None, nranks, ctypes.byref(ident), rank,
                                            ctypes.byref(options), ctypes.byref(out)),
                    "ncclshim_comm_init")
        self._c = out.value
        # Also after a blocking init: NCCL_COMM_BLOCKING=0 in the environment may have made
        # it non-blocking. A communicator already ready answers at once.
        status = lib_.ncclshim_comm_wait(self._c, self._ms)
        if status != _clib.OK:
            err = _clib.error(status, "ncclshim_comm_wait")
            self.abort()
            raise err
        self._fast = lib_.ncclshim_comm_raw(self._c)
        self._bind()
        _learn_torch()

    def _bind(self):
        get = _clib.nccl_function
        self._allreduce = get("ncclAllReduce")
        self._broadcast = get("ncclBroadcast")
        self._reduce = get("ncclReduce")
        self._allgather = get("ncclAllGather")
        self._reducescatter = get("ncclReduceScatter")
        self._send = get("ncclSend")
        self._recv = get("ncclRecv")

    def _optional(self, name):
        fn = self._fns.get(name)
        if fn is None:
            fn = self._fns[name] = _clib.nccl_function(name)  # raises, naming the release
        return fn

    # ---- state ----
    def _handle(self):
        if self._c is None:
            raise NcclshimError("the communicator is closed", call="Communicator")
        return self._c

    @property
    def state(self):
        """"ready", "failed", "aborted", ... (ncclshim_comm_state_name); "closed"."""
        if self._c is None:
            return "closed"
        lib_ = _clib.lib()
        return lib_.ncclshim_comm_state_name(lib_.ncclshim_comm_state_of(self._c)).decode()

    @property
    def raw(self):
        """The ncclComm_t (int) while ready, for calls ncclshim does not wrap; None else."""
        return _clib.lib().ncclshim_comm_raw(self._c) if self._c else None

    def _comm(self):
        """The ncclComm_t when self._fast has none: watched (the watchdog may fail it at any
        time, and then ncclshim_comm_raw answers NULL), failed or closed."""
        raw = _clib.lib().ncclshim_comm_raw(self._c) if self._c else None
        if raw is None:
            # A failed communicator answers every checked call with its failure, at once.
            status = _clib.lib().ncclshim_comm_wait(self._c, 0) if self._c else _clib.OK
            if status != _clib.OK:
                raise _clib.error(status, "Communicator (%s)" % self.state)
            raise NcclshimError("the communicator is %s" % self.state, call="Communicator",
                                status=_clib.INVALID_ARGUMENT, status_name="INVALID_ARGUMENT")
        return raw

    def _after(self, r, name, s, count, dtype):
        """After a call that answered r != ncclSuccess, or on a watched communicator: finish
        a call in a group or not yet done (non-blocking) within the timeout, raise with
        NCCL's code and text for any other answer, and record the operation when watched."""
        if r and not (r == _IN_PROGRESS and self._groups):
            lib_ = _clib.lib()
            status = lib_.ncclshim_comm_check(self._c, r, _NAMES[name], self._ms)
            if status != _clib.OK:
                raw = lib_.ncclshim_comm_raw(self._c)
                if raw is None:
                    self._fast = None  # failed: only abort() releases it
                raise _clib.error(status, name, raw)
        if self._watched:
            if self._groups:
                self._pending.append((s, name, count, dtype))
            else:
                self._record(s, name, count, dtype)

    def _record(self, s, name, count, dtype):
        status = _clib.lib().ncclshim_comm_record(self._c, s, _NAMES[name], count, dtype)
        if status != _clib.OK:
            raise _clib.error(status, "ncclshim_comm_record(%s)" % name)

    # ---- collectives ----
    # The call path: all_reduce, broadcast, reduce, all_gather and reduce_scatter are made
    # from _PAIR_CALL below (two torch tensors are checked inline, with no Python frame of
    # their own); any other buffers through their type's cached pair reader; the stream and
    # the reduction through dicts, the cached ncclComm_t, one ctypes call; anything else only
    # when NCCL answered other than success, or a watchdog watches.
    # tests/python/comm_checks.py (Frameworks) counts it.

    def send(self, buf, peer, stream=None):
        self._p2p(self._send, "ncclSend", buf, peer, stream)

    def recv(self, buf, peer, stream=None):
        self._p2p(self._recv, "ncclRecv", buf, peer, stream)

    def _p2p(self, fn, nccl, buf, peer, stream):
        p, n, dt, fw = (_R.get(type(buf)) or _reader(buf))(buf)
        s = _current(fw) if stream is None else _S[type(stream)](stream)
        r = fn(p, n, dt, peer, self._fast or self._comm(), s)
        if r or self._watched:
            self._after(r, nccl, s, n, dt)

    def all_to_all(self, send, recv, stream=None):
        """Block i of send goes to rank i; recv's block j comes from rank j (NCCL 2.28.3+)."""
        fn = self._optional("ncclAlltoAll")
        sp, rp, total, dt, fw = (_P.get(type(send)) or _pair(send))(send, recv, 1, "recv")
        n = self._per_rank(total, "send")
        s = _current(fw) if stream is None else _S[type(stream)](stream)
        r = fn(sp, rp, n, dt, self._fast or self._comm(), s)
        if r or self._watched:
            self._after(r, "ncclAlltoAll", s, n, dt)

    def gather(self, send, recv=None, root=0, stream=None):
        """recv on root (nranks x send's count) = every rank's send (NCCL 2.28.3+); recv is
        not used on the other ranks (None allowed there)."""
        self._rooted("ncclGather", send, recv, "recv", root, stream)

    def scatter(self, send, recv, root=0, stream=None):
        """recv = block `rank` of root's send (nranks x recv's count) (NCCL 2.28.3+); send is
        not used on the other ranks (None allowed there)."""
        self._rooted("ncclScatter", recv, send, "send", root, stream)

    def _rooted(self, nccl, block, full, what, root, stream):
        """gather and scatter: `block` holds the call's count, `full` (named `what`) nranks
        blocks of it, and may be None off the root; gather sends the block, scatter the full."""
        fn = self._optional(nccl)
        if full is not None or self.rank == root:
            bp, fp, n, dt, fw = (_P.get(type(block)) or _pair(block))(block, full, self.nranks,
                                                                      what)
        else:
            (bp, n, dt, fw), fp = (_R.get(type(block)) or _reader(block))(block), None
        s = _current(fw) if stream is None else _S[type(stream)](stream)
        sp, rp = (bp, fp) if nccl == "ncclGather" else (fp, bp)
        r = fn(sp, rp, n, dt, root, self._fast or self._comm(), s)
        if r or self._watched:
            self._after(r, nccl, s, n, dt)

    def _per_rank(self, total, what):
        if total % self.nranks:
            raise ValueError("%s has %d elements, not a multiple of %d ranks"
                             % (what, total, self.nranks))
        return total // self.nranks

    def group(self):
        """ncclGroupStart/End around calls on this communicator (ncclshim.group for several)."""
        return _Group([self], self.timeout)

    # ---- watchdog, symmetric memory ----
    def watch(self, dog, timeout):
        """Watch this (ready) communicator with a Watchdog: each operation recorded after a
        collective gets `timeout` seconds; past it the watchdog fails and aborts the
        communicator and calls its callback."""
        _clib.check(_clib.lib().ncclshim_comm_watch(self._handle(), dog._handle(),
                                                    max(1, _clib.milliseconds(timeout))),
                    "ncclshim_comm_watch")
        dog._comms[self._c] = self
        self._dog = dog
        self._watched, self._fast = True, None

    def unwatch(self):
        if self._watched:
            self._watched = False
            _clib.check(_clib.lib().ncclshim_comm_unwatch(self._c), "ncclshim_comm_unwatch")
            self._fast = _clib.lib().ncclshim_comm_raw(self._c)

    def record_graph(self, stream, label, ops):
        """Record a CUDA graph's replay on `stream` with the watchdog: `ops` operations under
        `label` (ncclshim_comm_record_graph, where this libncclshim has it)."""
        if not _clib.has("ncclshim_comm_record_graph"):
            raise NcclshimError("this libncclshim has no ncclshim_comm_record_graph",
                                call="ncclshim_comm_record_graph",
                                status=_clib.UNAVAILABLE, status_name="UNAVAILABLE")
        status = _clib.lib().ncclshim_comm_record_graph(self._handle(), _stream(stream),
                                                        label.encode(), ops)
        _clib.check(status, "ncclshim_comm_record_graph")

    def symmetric(self, nbytes, stream=None):
        """A SymmetricBuffer of at least nbytes, registered as a symmetric window (collective:
        every rank calls it with the same size; NCCL 2.28+)."""
        from .symmem import SymmetricBuffer
        return SymmetricBuffer(self, nbytes, stream)

    # ---- teardown ----
    def close(self, timeout=None):
        """Destroy (finalize, wait, destroy), then abort when that failed or ran out of time.
        Returns "destroyed" or "aborted". Idempotent. timeout bounds the wait in
        "nonblocking" mode only: on a blocking communicator (and split-blocking's child)
        NCCL's finalize itself blocks until the communicator's work is done, and NCCL has no
        safe way to stop a finalize in progress (its abort frees what the finalize still
        uses). After a hang, call abort() instead; or watch the communicator: once the
        watchdog has failed it, close() aborts at once."""
        if self._c is None:
            return "closed"
        ms = _clib.milliseconds(self.timeout if timeout is None else timeout)
        lib_ = _clib.lib()
        self._fast, self._watched = None, False
        if lib_.ncclshim_comm_destroy(self._c, ms) == _clib.OK:
            self._free()
            return "destroyed"
        return self.abort(timeout)

    def abort(self, timeout=None):
        """ncclCommAbort on its own thread, bounded; the communicator is released. Raises
        NcclTimeout when NCCL's abort itself hangs (its thread is left running)."""
        if self._c is None:
            return "closed"
        ms = _clib.milliseconds(self.timeout if timeout is None else timeout)
        self._fast, self._watched = None, False
        status = _clib.lib().ncclshim_comm_abort(self._c, ms)
        if status == _clib.TIMEOUT:
            raise _clib.error(status, "ncclshim_comm_abort")
        self._free()
        return "aborted"

    def _free(self):
        c, self._c = self._c, None
        dog = getattr(self, "_dog", None)
        if dog is not None:
            dog._comms.pop(c, None)
        _clib.lib().ncclshim_comm_free(c)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self.abort()  # after a failure a collective teardown may hang
        return False

    def __del__(self):
        if getattr(self, "_c", None) is not None and _clib is not None:
            try:
                _clib.lib().ncclshim_comm_free(self._c)  # no NCCL call: NCCL keeps it
            except Exception:
                pass

    def __repr__(self):
        return "<ncclshim.Communicator rank %d of %d, %s, %s>" % (self.rank, self.nranks,
                                                                  self.mode, self.state)


class _NoTensorYet:
    """_TENSOR until torch is seen: no object has this type."""


_TENSOR = _NoTensorYet  # torch.Tensor once seen: the type the inline fast path takes

# One method per row, from _PAIR_CALL: (name, parameters before stream, NCCL function,
# bound attribute, the buffer whose count is the call's, the other, how many times it
# holds that count, the arguments between the datatype and the comm, docstring).
_PAIR_CALLS = [
    ("all_reduce", 'send, recv=None, op="sum"', "ncclAllReduce", "_allreduce", "send", "recv",
     "1", "o, ", "recv = reduce(send) over the ranks; recv None: in place."),
    ("broadcast", "send, recv=None, root=0", "ncclBroadcast", "_broadcast", "send", "recv", "1",
     "root, ", "recv on every rank = send of root; recv None: in place."),
    ("reduce", 'send, recv=None, root=0, op="sum"', "ncclReduce", "_reduce", "send", "recv",
     "1", "o, root, ", "recv on root = reduce(send) over the ranks; recv None: in place."),
    ("all_gather", "send, recv", "ncclAllGather", "_allgather", "send", "recv", "self.nranks",
     "", "recv (nranks x send's count) = every rank's send, in rank order."),
    ("reduce_scatter", 'send, recv, op="sum"', "ncclReduceScatter", "_reducescatter", "recv",
     "send", "self.nranks", "o, ",
     "recv (send's count / nranks) = this rank's block of reduce(send)."),
]
# {a}: the buffer whose count is the call's, {b}: the other (None: in place, where allowed).
_PAIR_CALL = """\
def {name}(self, {params}, stream=None):
    if type({a}) is _TENSOR and type({b}) is _TENSOR:
        d, n = {a}.dtype, {a}.numel()
        if {a}.is_cuda and {b}.is_cuda and d is {b}.dtype and {a}.is_contiguous() and \\
                {b}.is_contiguous() and {b}.numel() == n * {scale}:
            {a}_p, {b}_p, dt, fw = {a}.data_ptr(), {b}.data_ptr(), _TORCH_CODES[d], "torch"
        else:  # _pair_any says what is wrong
            {a}_p, {b}_p, n, dt, fw = _pair_any({a}, {b}, {scale}, "{b}")
    else:
        {a}_p, {b}_p, n, dt, fw = {generic}
    s = _current(fw) if stream is None else _S[type(stream)](stream)
    {op_line}r = self.{attr}(send_p, recv_p, n, dt, {middle}self._fast or self._comm(), s)
    if r or self._watched:
        self._after(r, "{nccl}", s, n, dt)
"""


def _learn_torch():
    """_TENSOR from a torch already loaded (never imported here): at each communicator's
    init, and when the generic path first meets a torch tensor (torch imported later)."""
    global _TENSOR
    torch = sys.modules.get("torch")
    if torch is not None:
        _TENSOR = torch.Tensor


def _pair_reader(obj):
    """buffers.pair, learning torch's Tensor type for the inline fast path."""
    found = _pair(obj)
    if found is _pair_torch:
        _learn_torch()
    return found


def _define_pair_calls():
    for name, params, nccl, attr, a, b, scale, middle, doc in _PAIR_CALLS:
        generic = '(_P.get(type({a})) or _pair_reader({a}))({a}, {b}, {scale}, "{b}")'.format(
            a=a, b=b, scale=scale)
        if "=None" in params:
            generic = "_in_place({a}) if {b} is None else {g}".format(a=a, b=b, g=generic)
        text = _PAIR_CALL.format(name=name, params=params, nccl=nccl, attr=attr, a=a, b=b,
                                 scale=scale, middle=middle, generic=generic,
                                 op_line="o = op if type(op) is int else _OPC[op]\n    "
                                 if "op=" in params else "")
        # A file name inside the package (so that profilers count the frame as the
        # package's), with its text in linecache (so that tracebacks show the line).
        filename = "%s<%s>" % (__file__, name)
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        space = {}
        exec(compile(text, filename, "exec"), globals(), space)
        method = space[name]
        method.__doc__, method.__qualname__ = doc, "Communicator." + name
        setattr(Communicator, name, method)


_define_pair_calls()

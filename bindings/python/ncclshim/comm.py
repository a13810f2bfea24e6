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
NcclUnavailable at once, naming the release that brought it. Every argument is checked
before NCCL is called. The call path allocates no device memory, synchronizes nothing and
copies nothing, so it can be captured in a CUDA graph.

The collectives are written out in _PyCalls below. Where the package's extension module
(_fast, C against the stable ABI) loads, Communicator also derives from its Calls type,
whose methods of the same names take the common case (torch tensors, int or known stream
types, the reductions by name or number) in C, and hand any other call, unchanged, to the
method here: the checks and their messages exist once, here."""
import contextlib
import ctypes
import threading
import time
from typing import Any, List, Optional

from . import _args, _clib
from .buffers import BOOL, buffer as _buffer, pair as _pair, stream as _stream
from .collconfig import CollConfig
from .errors import NcclshimError

MODES = {"nonblocking": 0, "blocking": 1, "split-blocking": 2}
# torch's ReduceOp spells prod PRODUCT (its members print as "RedOpType.PRODUCT").
_OPS = {"sum": 0, "prod": 1, "product": 1, "max": 2, "min": 3, "avg": 4}
# bool arrays (one byte, 0 or 1, sent as ncclUint8) reduce as torch reduces them: SUM is MAX
# (any), PROD is MIN (all); AVG and NCCL's custom reductions have no bool meaning.
BOOL_OPS = {0: 2, 1: 3, 2: 2, 3: 3}
_UINT8 = 1  # ncclUint8
_IN_PROGRESS = 7
# Call names as bytes that live as long as the module: ncclshim_comm_record keeps the pointer.
_COLLECTIVES = ("ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather",
                "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter")
_NAMES = {n: n.encode() for n in _COLLECTIVES + tuple(c + "Config" for c in _COLLECTIVES) +
          ("ncclSend", "ncclRecv")}
# The collectives every NCCL since 2.7 has, bound at init (the others on first use).
_HOT = ("ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
        "ncclSend", "ncclRecv")
OPC = dict(_OPS)  # every spelling of a reduction seen (str, torch's ReduceOp, ...) -> code


def _op(op):
    """ncclRedOp_t for op: a name, torch's ReduceOp member, or an int in C's int range."""
    if isinstance(op, int):
        return _args.integer(op, "op", 0, _args.INT_MAX)
    try:
        code = OPC.get(op)
    except TypeError:  # unhashable
        code = None
    if code is None:
        name = str(op).rsplit(".", 1)[-1].lower()  # "sum", torch's ReduceOp.SUM, "ncclSum"
        code = _OPS.get(name[4:] if name.startswith("nccl") else name)
        if code is None:
            raise ValueError("op %r is not a reduction: sum, prod, max, min, avg or an "
                             "ncclRedOp_t" % (op,))
        OPC[op] = code
    return code


def _reduction(op, dt):
    """(ncclRedOp_t, ncclDataType_t) NCCL gets for op on dtype dt (BOOL: ncclUint8)."""
    o = _op(op)
    if dt != BOOL:
        return o, dt
    if o not in BOOL_OPS:
        raise ValueError("op %r is not defined on bool buffers (torch refuses it too): sum, "
                         "prod, max or min" % (op,))
    return BOOL_OPS[o], _UINT8


def unique_id() -> bytes:
    """ncclGetUniqueId, as the 128 bytes every rank passes to Communicator."""
    f = _clib.functions()
    uid = f.ncclUniqueId()
    r = _clib.nccl_function("ncclGetUniqueId")(ctypes.byref(uid))
    if r != 0:
        _clib.check(_clib.lib().ncclshim_nccl_check(_clib.nccl(), r, b"ncclGetUniqueId"),
                    "ncclGetUniqueId")
    return ctypes.string_at(ctypes.addressof(uid), ctypes.sizeof(uid))


def _same_count(send, recv):
    """(send's ptr, recv's, count, dtype, framework) of a call whose two buffers hold one
    count (recv None: in place, send written)."""
    if recv is None:
        sp, n, dt, fw = _buffer(send, "send", True)
        return sp, sp, n, dt, fw
    return _pair(send, "send", False, recv, "recv", True, 1)


class _Group:
    """ncclGroupStart on entry; on exit ncclshim_comm_group_end, waiting (bounded) for the
    communicators that took part. Every argument is checked before ncclGroupStart, and once
    it has run the group is ended whatever raises (a communicator closed inside the group
    takes no part in the wait)."""

    def __init__(self, comms, timeout):
        for i, c in enumerate(comms):
            if not isinstance(c, Communicator):
                raise TypeError("group: argument %d is a %s, not a Communicator"
                                % (i + 1, type(c).__name__))
        self.comms, self.ms = comms, _args.milliseconds(timeout)

    def __enter__(self):
        for c in self.comms:
            if c._closing:  # a closed one raises here, before ncclGroupStart
                c._handle()
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
            c._calls.append(None)  # the group's end uses their handles: calls in flight
        try:
            live = [c for c in self.comms if not c._closing]
            handles = (ctypes.c_void_p * max(1, len(live)))(*[c._c for c in live])
            status = _clib.lib().ncclshim_comm_group_end(None, handles, len(live), self.ms)
            pending = [(c, c._pending) for c in self.comms if not c._groups and c._pending]
            for c, _ in pending:
                c._pending = []
            if kind is None:
                _clib.check(status, "ncclGroupEnd")
                for c, ops in pending:  # NCCL enqueued them at the group's end: mark them
                    if not c._closing:
                        for op in ops:
                            c._record(*op)
        finally:
            for c in self.comms:
                c._leave()
        return False


def group(*comms: "Communicator", timeout: float = 60.0) -> _Group:
    """ncclGroupStart/End as a context manager over these communicators (each waited for,
    all within one timeout, when non-blocking)."""
    return _Group(list(comms), timeout)


class _PyCalls:
    """The collectives, checked and called through ctypes: the whole call path where the
    extension does not load, and every call the extension's fast path does not take."""
    nranks: int
    rank: int
    _fast: Optional[int]
    _watched: bool
    _calls: List[None]
    _ended: bool
    _fast_calls = 0  # the extension's calls in flight (its Calls type counts them in C)

    def _run(self, fn, name, head, s, tail, n, dt):
        """NCCL's fn(*head, comm, s, *tail), then _after when needed, counted as a call in
        flight: the handle is not freed before it returns (Communicator._settle)."""
        calls = self._calls
        calls.append(None)  # atomic under the GIL, as is pop()
        try:
            r = fn(*head, self._fast or self._comm(), s, *tail)
            if r or self._watched:
                self._after(r, name, s, n, dt)
        finally:
            calls.pop()
            if self._ended:
                self._settle()

    def all_reduce(self, send: Any, recv: Any = None, op: Any = "sum", stream: Any = None,
                   config: Optional[CollConfig] = None) -> None:
        """recv = reduce(send) over the ranks; recv None: in place."""
        sp, rp, n, dt, fw = _same_count(send, recv)
        o, dt = _reduction(op, dt)
        s = _stream(stream, fw)
        fn, name, tail = self._entry("ncclAllReduce", config)
        self._run(fn, name, (sp, rp, n, dt, o), s, tail, n, dt)

    def broadcast(self, send: Any, recv: Any = None, root: int = 0, stream: Any = None,
                  config: Optional[CollConfig] = None) -> None:
        """recv on every rank = send of root; recv None: in place."""
        sp, rp, n, dt, fw = _same_count(send, recv)
        root = _args.rank_in(root, "root", self.nranks)
        dt = _UINT8 if dt == BOOL else dt
        s = _stream(stream, fw)
        fn, name, tail = self._entry("ncclBroadcast", config)
        self._run(fn, name, (sp, rp, n, dt, root), s, tail, n, dt)

    def reduce(self, send: Any, recv: Any = None, root: int = 0, op: Any = "sum",
               stream: Any = None, config: Optional[CollConfig] = None) -> None:
        """recv on root = reduce(send) over the ranks; recv None: in place."""
        sp, rp, n, dt, fw = _same_count(send, recv)
        root = _args.rank_in(root, "root", self.nranks)
        o, dt = _reduction(op, dt)
        s = _stream(stream, fw)
        fn, name, tail = self._entry("ncclReduce", config)
        self._run(fn, name, (sp, rp, n, dt, o, root), s, tail, n, dt)

    def all_gather(self, send: Any, recv: Any, stream: Any = None,
                   config: Optional[CollConfig] = None) -> None:
        """recv (nranks x send's count) = every rank's send, in rank order."""
        sp, rp, n, dt, fw = _pair(send, "send", False, recv, "recv", True, self.nranks)
        dt = _UINT8 if dt == BOOL else dt
        s = _stream(stream, fw)
        fn, name, tail = self._entry("ncclAllGather", config)
        self._run(fn, name, (sp, rp, n, dt), s, tail, n, dt)

    def reduce_scatter(self, send: Any, recv: Any, op: Any = "sum", stream: Any = None,
                       config: Optional[CollConfig] = None) -> None:
        """recv (send's count / nranks) = this rank's block of reduce(send)."""
        rp, sp, n, dt, fw = _pair(recv, "recv", True, send, "send", False, self.nranks)
        o, dt = _reduction(op, dt)
        s = _stream(stream, fw)
        fn, name, tail = self._entry("ncclReduceScatter", config)
        self._run(fn, name, (sp, rp, n, dt, o), s, tail, n, dt)

    def send(self, buf: Any, peer: int, stream: Any = None) -> None:
        """buf to rank peer (in a group with the matching recv)."""
        self._p2p("ncclSend", buf, False, peer, stream)

    def recv(self, buf: Any, peer: int, stream: Any = None) -> None:
        """buf from rank peer (in a group with the matching send)."""
        self._p2p("ncclRecv", buf, True, peer, stream)

    def _p2p(self, name, buf, written, peer, stream):
        p, n, dt, fw = _buffer(buf, "buf", written)
        peer = _args.rank_in(peer, "peer", self.nranks)
        dt = _UINT8 if dt == BOOL else dt
        s = _stream(stream, fw)
        self._run(self._nccl[name], name, (p, n, dt, peer), s, (), n, dt)

    def all_to_all(self, send: Any, recv: Any, stream: Any = None,
                   config: Optional[CollConfig] = None) -> None:
        """Block i of send goes to rank i; recv's block j comes from rank j (NCCL 2.28.3+)."""
        fn, name, tail = self._entry("ncclAlltoAll", config)
        sp, rp, total, dt, fw = _pair(send, "send", False, recv, "recv", True, 1)
        if total % self.nranks:
            raise ValueError("send has %d elements, not a multiple of %d ranks"
                             % (total, self.nranks))
        n = total // self.nranks
        dt = _UINT8 if dt == BOOL else dt
        s = _stream(stream, fw)
        self._run(fn, name, (sp, rp, n, dt), s, tail, n, dt)

    def gather(self, send: Any, recv: Any = None, root: int = 0, stream: Any = None,
               config: Optional[CollConfig] = None) -> None:
        """recv on root (nranks x send's count) = every rank's send (NCCL 2.28.3+); recv is
        not used on the other ranks (None allowed there)."""
        self._rooted("ncclGather", send, "send", recv, "recv", root, stream, config)

    def scatter(self, send: Any, recv: Any, root: int = 0, stream: Any = None,
                config: Optional[CollConfig] = None) -> None:
        """recv = block `rank` of root's send (nranks x recv's count) (NCCL 2.28.3+); send is
        not used on the other ranks (None allowed there)."""
        self._rooted("ncclScatter", recv, "recv", send, "send", root, stream, config)

    def _rooted(self, nccl, block, block_name, full, full_name, root, stream, config):
        """gather and scatter: `block` holds the call's count, `full` nranks blocks of it and
        may be None off the root; gather sends the block, scatter writes it."""
        fn, name, tail = self._entry(nccl, config)
        root = _args.rank_in(root, "root", self.nranks)
        scatter = nccl == "ncclScatter"
        if full is not None or self.rank == root:
            bp, fp, n, dt, fw = _pair(block, block_name, scatter, full, full_name, not scatter,
                                      self.nranks)
        else:
            (bp, n, dt, fw), fp = _buffer(block, block_name, scatter), None
        sp, rp = (fp, bp) if scatter else (bp, fp)
        dt = _UINT8 if dt == BOOL else dt
        s = _stream(stream, fw)
        self._run(fn, name, (sp, rp, n, dt, root), s, tail, n, dt)

    def _entry(self, name, config):
        """The call's NCCL function, its name and what follows the stream: the plain entry,
        or with a CollConfig its ...Config one (where the loaded NCCL has it) and the
        config's address."""
        if config is None:
            return self._nccl.get(name) or self._optional(name), name, ()
        if not isinstance(config, CollConfig):
            raise TypeError("config must be an ncclshim.CollConfig, not %s"
                            % type(config).__name__)
        name += "Config"
        # CollConfig's own property: a subclass's address would reach NCCL unchecked
        return self._optional(name), name, (CollConfig.address.fget(config),)


class _NoExtension:
    """Communicator's first base where the extension does not load: nothing."""


# The extension's Calls type (its fast path hands other calls to _PyCalls' methods), or
# _NoExtension.
_Fast = _clib.fast_calls(_PyCalls, OPC) or _NoExtension


class Communicator(_Fast, _PyCalls, _clib.Owner):  # type: ignore[misc, valid-type]
    """Rank `rank` of an `nranks`-rank communicator made from `uid` (unique_id()'s bytes), on
    the calling thread's current CUDA device. timeout (seconds) bounds every wait: the init
    (except in "blocking" mode, where NCCL waits by itself), non-blocking operations, group
    ends, close() and abort()."""

    def __init__(self, nranks: int, rank: int, uid: bytes, mode: str = "split-blocking",
                 timeout: float = 60.0) -> None:
        if getattr(self, "_c", None) is not None:  # its handle would be dropped, never freed
            raise TypeError("this Communicator is already made: close() it and make another")
        self._c = None
        # Threads: calls in flight (one entry each), no new call once closing, the handle
        # torn down (destroyed or aborted) once ended and freed when no call is in flight.
        self._calls, self._closing, self._ended = [], False, False
        self._closing_one = threading.Lock()  # one close() at a time
        self._freeing = threading.Lock()
        nranks = _args.integer(nranks, "nranks", 1, _args.INT_MAX)
        rank = _args.rank_in(rank, "rank", nranks)
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
        if not isinstance(uid, (bytes, bytearray)):
            raise TypeError("uid must be the bytes unique_id() returned, not %s"
                            % type(uid).__name__)
        self._ms = _args.milliseconds(timeout)
        lib_, f = _clib.lib(), _clib.functions()
        if len(uid) != ctypes.sizeof(f.ncclUniqueId):
            raise ValueError("uid has %d bytes; a unique id has %d"
                             % (len(uid), ctypes.sizeof(f.ncclUniqueId)))
        _clib.require_nccl()
        _clib.bind_fast()
        self.nranks, self.rank, self.mode, self.timeout = nranks, rank, mode, timeout
        self._fast = None  # the ncclComm_t while ready and unwatched: no C call to get it
        self._watched = False
        self._groups = 0
        self._pending: List[Any] = []  # operations to record with the watchdog at group end
        self._fns = {}
        self._nccl = {name: _clib.nccl_function(name) for name in _HOT}
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

    def _optional(self, name):
        fn = self._fns.get(name)
        if fn is None:
            fn = self._fns[name] = _clib.nccl_function(name)  # raises, naming the release
        return fn

    # ---- state, and the calls in flight ----
    def _handle(self):
        if self._closing or self._c is None:
            raise NcclshimError("the communicator is closed", call="Communicator")
        return self._c

    def _leave(self):
        """A call in flight returns; the last one after the teardown frees the handle."""
        self._calls.pop()
        if self._ended:
            self._settle()

    @contextlib.contextmanager
    def _use(self):
        """The handle, counted as a call in flight while the block runs; raises the
        "closed" error once close() or abort() has begun."""
        self._calls.append(None)  # before the check: close() sets _closing, then counts
        try:
            yield self._handle()
        finally:
            self._leave()

    def _busy(self):
        return len(self._calls) + self._fast_calls

    def _drain(self, deadline):
        """Waits until no call is in flight or time.monotonic() passes deadline; whether
        none is."""
        pause = 0.0002
        while self._busy():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.01)
        return True

    def _settle(self):
        """Frees the handle once torn down and no call is in flight (whoever sees it
        last: close(), abort() or the last call to return)."""
        if not self._ended or self._busy():
            return
        with self._freeing:
            c, self._c = self._c, None
        if c is not None:
            _clib.lib().ncclshim_comm_free(c)

    @property
    def state(self) -> str:
        """"ready", "failed", "aborted", ... (ncclshim_comm_state_name); "closed"."""
        self._calls.append(None)
        try:
            if self._ended or self._c is None:
                return "closed"
            lib_ = _clib.lib()
            return lib_.ncclshim_comm_state_name(lib_.ncclshim_comm_state_of(self._c)).decode()
        finally:
            self._leave()

    @property
    def raw(self) -> Optional[int]:
        """The ncclComm_t (int) while ready, for calls ncclshim does not wrap; None else."""
        self._calls.append(None)
        try:
            return None if self._closing else _clib.lib().ncclshim_comm_raw(self._c)
        finally:
            self._leave()

    def _comm(self):
        """The ncclComm_t when self._fast has none: watched (the watchdog may fail it at any
        time, and then ncclshim_comm_raw answers NULL), failed or closed. Called by a call
        in flight (counted), which keeps the handle."""
        raw = _clib.lib().ncclshim_comm_raw(self._handle())
        if raw is None:
            # A failed communicator answers every checked call with its failure, at once.
            status = _clib.lib().ncclshim_comm_wait(self._c, 0)
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

    def group(self) -> _Group:
        """ncclGroupStart/End around calls on this communicator (ncclshim.group for several)."""
        return _Group([self], self.timeout)

    # ---- watchdog, symmetric memory ----
    def watch(self, dog: Any, timeout: float) -> None:
        """Watch this (ready) communicator with a Watchdog: each operation recorded after a
        collective gets `timeout` seconds; past it the watchdog fails and aborts the
        communicator and calls its callback."""
        from .watchdog import Watchdog
        if not isinstance(dog, Watchdog):
            raise TypeError("dog must be a Watchdog, not %s" % type(dog).__name__)
        ms = max(1, _args.milliseconds(timeout))
        with self._use() as c, dog._use() as d:
            _clib.check(_clib.lib().ncclshim_comm_watch(c, d, ms), "ncclshim_comm_watch")
            dog._comms[c] = self
            self._dog = dog
            self._watched, self._fast = True, None

    def unwatch(self) -> None:
        if self._watched:
            with self._use() as c:
                self._watched = False
                _clib.check(_clib.lib().ncclshim_comm_unwatch(c), "ncclshim_comm_unwatch")
                self._fast = _clib.lib().ncclshim_comm_raw(c)
                if self._closing:  # close() began meanwhile: no new call may take it
                    self._fast = None

    def record_graph(self, stream: Any, label: str, ops: int) -> None:
        """Record a CUDA graph's replay on `stream` with the watchdog: `ops` operations under
        `label` (ncclshim_comm_record_graph, where this libncclshim has it)."""
        label = _args.text(label, "label")
        ops = _args.integer(ops, "ops", 1, _args.INT_MAX)
        s = _stream(stream)
        if not _clib.has("ncclshim_comm_record_graph"):
            raise NcclshimError("this libncclshim has no ncclshim_comm_record_graph",
                                call="ncclshim_comm_record_graph",
                                status=_clib.UNAVAILABLE, status_name="UNAVAILABLE")
        with self._use() as c:
            status = _clib.lib().ncclshim_comm_record_graph(c, s, label.encode(), ops)
        _clib.check(status, "ncclshim_comm_record_graph")

    def symmetric(self, nbytes: int, stream: Any = None) -> Any:
        """A SymmetricBuffer of at least nbytes, registered as a symmetric window (collective:
        every rank calls it with the same size; NCCL 2.28+)."""
        from .symmem import SymmetricBuffer
        return SymmetricBuffer(self, nbytes, stream)

    # ---- teardown ----
    def close(self, timeout: Optional[float] = None) -> str:
        """Destroy (finalize, wait, destroy), then abort when that failed or ran out of time.
        Returns "destroyed" or "aborted"; "closed" once closed. timeout bounds the wait in
        "nonblocking" mode only: on a blocking communicator (and split-blocking's child)
        NCCL's finalize itself blocks until the communicator's work is done, and NCCL has no
        safe way to stop a finalize in progress (its abort frees what the finalize still
        uses). After a hang, call abort() instead; or watch the communicator: once the
        watchdog has failed it, close() aborts at once.
        From any thread: new calls raise at once; calls in flight on other threads are
        waited for within timeout (past it, the communicator is aborted, which ends their
        waits), and the handle is freed once the last of them has returned."""
        if self._ended or self._c is None:
            return "closed"
        ms = _args.milliseconds(self.timeout if timeout is None else timeout)
        with self._closing_one:
            if self._ended or self._c is None:
                return "closed"
            self._closing, self._fast, self._watched = True, None, False  # in this order
            deadline = time.monotonic() + ms / 1000.0
            status = None
            if self._drain(deadline):
                self._calls.append(None)
                try:
                    left = max(0, int((deadline - time.monotonic()) * 1000))
                    status = _clib.lib().ncclshim_comm_destroy(self._c, left)
                finally:
                    self._leave()
            if status == _clib.OK:
                self._end()
                return "destroyed"
        return self.abort(timeout)

    def abort(self, timeout: Optional[float] = None) -> str:
        """ncclCommAbort on its own thread, bounded; the communicator is released. Raises
        NcclTimeout when NCCL's abort itself hangs (its thread is left running). From any
        thread: a wait in flight on another thread ends with an error, and the handle is
        freed once the last call in flight has returned."""
        if self._ended or self._c is None:
            return "closed"
        ms = _args.milliseconds(self.timeout if timeout is None else timeout)
        self._closing, self._fast, self._watched = True, None, False  # in this order
        self._calls.append(None)
        try:
            status = _clib.lib().ncclshim_comm_abort(self._c, ms)
        finally:
            self._leave()
        if status == _clib.TIMEOUT:
            raise _clib.error(status, "ncclshim_comm_abort")
        self._end()
        # the calls the abort ended return at their next poll: free the handle here when
        # they have, else the last of them does
        self._drain(time.monotonic() + ms / 1000.0)
        self._settle()
        return "aborted"

    def _end(self):
        """Torn down: detach from the watchdog, free the handle when no call is in flight."""
        dog = getattr(self, "_dog", None)
        if dog is not None:
            dog._comms.pop(self._c, None)
        self._ended = True
        self._settle()

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, kind, value, tb) -> bool:
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

    def __repr__(self) -> str:
        return "<ncclshim.Communicator rank %d of %d, %s, %s>" % (self.rank, self.nranks,
                                                                  self.mode, self.state)

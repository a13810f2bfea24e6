"""The watchdog (ncclshim/watchdog.h) with a Python callback.

    dog = ncclshim.Watchdog(on_failure=lambda comm, error: log(error), interval=0.01)
    comm.watch(dog, timeout=30)    # each collective then gets 30 s, counted from its enqueue
    ...
    dog.stop()

One thread watches every communicator given to it; it never blocks in NCCL. When an
operation outlives its deadline, or NCCL reports an error, it marks the communicator failed,
starts ncclCommAbort on a thread of its own, and calls on_failure(comm, error) on its thread
(error: an NcclshimError with the watchdog's message). The communicator's next call raises at
once. on_failure may call anything but stop(): stop() called from it is deferred to a thread
of its own, which stops the watchdog once the callback has returned."""
import contextlib
import ctypes
import sys
import threading
import time
from typing import Any, Callable, Optional

from . import _args, _clib
from .errors import NcclshimError, NcclTimeout

# Every watchdog not yet stopped: its ctypes callback must outlive any call the C thread may
# still make, even when the program drops its last reference without stop().
_LIVE = set()


class Watchdog(_clib.Owner):
    def __init__(self, on_failure: Optional[Callable[[Any, NcclshimError], None]] = None,
                 interval: float = 0.01) -> None:
        if on_failure is not None and not callable(on_failure):
            raise TypeError("on_failure must be None or a callable (comm, error), not %s"
                            % type(on_failure).__name__)
        interval_ms = int(_args.seconds(interval, "interval") * 1000)
        if not 1 <= interval_ms <= 60000:
            raise ValueError("interval must be 0.001 to 60 seconds, not %r" % (interval,))
        f, lib_ = _clib.functions(), _clib.lib()
        self._comms = {}          # ncclshim_comm address -> Communicator
        self._on_failure = on_failure
        self._thread = None       # the watchdog thread's ident, seen in the callback
        self._dog = None
        self._calls = []          # calls in flight with the handle (one entry each)
        self.failures = []        # (Communicator or None, NcclshimError), in order
        # Kept as long as the C side can call it: until stop() has joined the thread.
        self._trampoline = f.ncclshim_watchdog_callback(self._called)
        options = f.ncclshim_watchdog_options(size=ctypes.sizeof(f.ncclshim_watchdog_options),
                                              interval_ms=interval_ms,
                                              on_failure=self._trampoline)
        out = ctypes.c_void_p()
        _clib.check(lib_.ncclshim_watchdog_start(ctypes.byref(options), ctypes.byref(out)),
                    "ncclshim_watchdog_start")
        self._dog = out.value
        self._stopping = threading.Lock()
        _LIVE.add(self)

    def _handle(self):
        if self._dog is None:
            raise NcclshimError("the watchdog is stopped", call="Watchdog")
        return self._dog

    @contextlib.contextmanager
    def _use(self):
        """The handle, counted as a call in flight (Communicator.watch) while the block runs:
        stop() frees it only once none is."""
        self._calls.append(None)  # before the check: stop() clears _dog, then counts
        try:
            yield self._handle()
        finally:
            self._calls.pop()

    def _called(self, comm, status, message, user):
        self._thread = threading.get_ident()
        text = message.decode(errors="replace") if message else ""
        cls = NcclTimeout if status == _clib.TIMEOUT else NcclshimError
        name = _clib.lib().ncclshim_status_name(status).decode()
        error = cls(text, call="watchdog", status=status, status_name=name)
        owner = self._comms.get(comm)  # watched: its calls ask ncclshim_comm_raw (now NULL)
        self.failures.append((owner, error))
        if self._on_failure is not None:
            try:
                self._on_failure(owner, error)
            except Exception:  # never into C: report it as Python would
                sys.excepthook(*sys.exc_info())

    def stop(self) -> None:
        """Stops and frees the watchdog (it unwatches what it still watches). From the
        callback's own thread it is deferred to another thread, and returns at once."""
        if self._dog is None:
            return
        if threading.get_ident() == self._thread:
            threading.Thread(target=self.stop, name="ncclshim-watchdog-stop",
                             daemon=True).start()
            return
        with self._stopping:
            dog, self._dog = self._dog, None
            if dog is None:
                return
            while self._calls:  # a watch() in flight: a short C call, never blocking
                time.sleep(0.0005)
            for comm in list(self._comms.values()):
                comm._watched = False
            result = _clib.lib().ncclshim_watchdog_stop(dog)
            self._comms.clear()
            _LIVE.discard(self)  # joined: C calls the callback no more
            if result is not None:  # ncclshim_status where the library returns one
                _clib.check(result, "ncclshim_watchdog_stop")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

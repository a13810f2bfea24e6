"""The watchdog under torch.cuda.graph (case capture-torch), run by graphs.sh.

A one-rank NCCLSHIM_COMM_SPLIT_BLOCKING communicator watched with a 300 ms deadline; an
all-reduce and its record enqueued eagerly behind a torch.cuda._sleep kernel, then the same
inside torch.cuda.graph (global capture mode, torch's default), the capture held open twice
the deadline while the watchdog passes; then 3 replays, each marked with
ncclshim_comm_record_graph. ncclshim and the collectives use the NCCL that torch itself
loads (the pip wheel's, NCCLSHIM_NCCL_LIBRARY=$PIP_NCCL), so that one NCCL is in the
process. Prints one CSV row: case,verdict,nccl,ms,limit_ms,detail.
Usage: python graphs_torch.py LIBNCCLSHIM LIBNCCL
"""
import ctypes
import os
import sys
import time

DEADLINE_MS = 300
INTERVAL_MS = 10
COUNT = 1024
CALL = b"ncclAllReduce"  # ncclshim_comm_record keeps the pointer: alive as long as the module


class CommOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("blocking", ctypes.c_int)]


class WatchdogOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("interval_ms", ctypes.c_int),
                ("cuda", ctypes.c_void_p), ("on_failure", ctypes.c_void_p),
                ("user", ctypes.c_void_p)]


class WatchCounts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t)] + [(name, ctypes.c_uint64) for name in (
        "recorded", "captured", "replays", "events", "catch_ups", "outstanding")]


def row(verdict, nccl, ms, detail=""):
    clean = str(verdict).replace(",", ";").replace("\n", " ")
    print("capture-torch,%s,%s,%.1f,0.0,%s" % (clean, nccl, ms, detail.replace(",", ";")))
    sys.stdout.flush()


def main():
    shim_path, nccl_path = sys.argv[1], sys.argv[2]
    os.environ["NCCLSHIM_NCCL_LIBRARY"] = nccl_path
    import torch  # loads the wheel's NCCL: the one ncclshim opens below

    start = time.monotonic()
    shim = ctypes.CDLL(shim_path)
    nccl = ctypes.CDLL(nccl_path)
    shim.ncclshim_last_error.restype = ctypes.c_char_p
    shim.ncclshim_comm_raw.restype = ctypes.c_void_p
    shim.ncclshim_comm_failure.restype = ctypes.c_char_p
    if shim.ncclshim_init() != 0:
        return row("FAIL: ncclshim_init: %s" % shim.ncclshim_last_error(), "none", 0)
    v = shim.ncclshim_version()
    version = "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)

    def check(status, what):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, shim.ncclshim_last_error().decode()))

    torch.cuda.set_device(0)
    x = torch.ones(COUNT, device="cuda")
    y = torch.zeros(COUNT, device="cuda")
    s = torch.cuda.Stream()
    uid = ctypes.create_string_buffer(128)
    if nccl.ncclGetUniqueId(uid) != 0:
        return row("FAIL: ncclGetUniqueId", version, 0)
    options = CommOptions(ctypes.sizeof(CommOptions), 2)  # NCCLSHIM_COMM_SPLIT_BLOCKING
    comm = ctypes.c_void_p()
    wopts = WatchdogOptions(ctypes.sizeof(WatchdogOptions), INTERVAL_MS, None, None, None)
    dog = ctypes.c_void_p()
    try:
        check(shim.ncclshim_comm_init(None, 1, uid, 0, ctypes.byref(options),
                                      ctypes.byref(comm)), "ncclshim_comm_init")
        check(shim.ncclshim_comm_wait(comm, 60000), "ncclshim_comm_wait")
        check(shim.ncclshim_watchdog_start(ctypes.byref(wopts), ctypes.byref(dog)),
              "ncclshim_watchdog_start")
        check(shim.ncclshim_comm_watch(comm, dog, DEADLINE_MS), "ncclshim_comm_watch")

        def all_reduce():
            raw = ctypes.c_void_p(shim.ncclshim_comm_raw(comm))
            r = nccl.ncclAllReduce(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()),
                                   ctypes.c_size_t(COUNT), 7, 0, raw,
                                   ctypes.c_void_p(s.cuda_stream))  # ncclFloat32, ncclSum
            check(r, "ncclAllReduce")
            check(shim.ncclshim_comm_record(comm, ctypes.c_void_p(s.cuda_stream),
                                            CALL, ctypes.c_size_t(COUNT), 7),
                  "ncclshim_comm_record")

        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)  # about 25 ms: the record below is pending
            all_reduce()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            all_reduce()
            time.sleep(2 * DEADLINE_MS / 1000)  # the watchdog passes during the capture
        y.zero_()
        for _ in range(3):
            g.replay()
            check(shim.ncclshim_comm_record_graph(comm, ctypes.c_void_p(s.cuda_stream),
                                                  b"torch", 1), "ncclshim_comm_record_graph")
        torch.cuda.synchronize()
        time.sleep(3 * INTERVAL_MS / 1000)
        state = shim.ncclshim_comm_state_of(comm)
        failure = shim.ncclshim_comm_failure(comm).decode()
        counts = WatchCounts(ctypes.sizeof(WatchCounts))
        check(shim.ncclshim_comm_watch_counts(comm, ctypes.byref(counts)),
              "ncclshim_comm_watch_counts")
        detail = "recorded %d captured %d replays %d events %d catch-ups %d" % (
            counts.recorded, counts.captured, counts.replays, counts.events, counts.catch_ups)
        ms = (time.monotonic() - start) * 1000
        if failure or state != 1:
            return row("FAIL: state %d: %s" % (state, failure), version, ms, detail)
        if not torch.equal(y, x):
            return row("FAIL: the replayed all-reduce gave a wrong result", version, ms, detail)
        row("ok", version, ms, detail)
        check(shim.ncclshim_comm_destroy(comm, 10000), "ncclshim_comm_destroy")
    except RuntimeError as e:
        row("FAIL: %s" % e, version, (time.monotonic() - start) * 1000)
        if comm:
            shim.ncclshim_comm_abort(comm, 10000)
    finally:
        if dog:
            shim.ncclshim_watchdog_stop(dog)


if __name__ == "__main__":
    main()

"""ncclshim's Python communicator on one GPU (tests/gpu/python/python.sh runs it in the torch venv):

    python_gpu.py OUTDIR

Cases (one line each in OUTDIR/summary.csv, `case,verdict,detail`):
  import              ncclshim's import time with nothing loaded (a fresh interpreter),
                      and with the communicator layer (loaded on first use)
  torch-<collective>  one-rank communicators, every collective checked on torch tensors, in
                      the three modes (all_to_all, gather, scatter where the NCCL has them)
  cupy-<collective>   the same on CuPy arrays and a CuPy stream
  dlpack              a buffer seen only through __dlpack__
  jax-all_reduce      a JAX array sent into a torch tensor, in place refused (JAX arrays are
                      read-only), in a process of their own
  cpu-refused         a CPU tensor raises BufferError before NCCL is called
  graph-capture       all_reduce captured in torch.cuda.graph, replayed on new data
  symmetric           a SymmetricBuffer all-reduced (NCCL 2.28+)
  watchdog-graph      (where libncclshim has ncclshim_comm_record_graph) a watched
                      communicator's collectives captured in a graph, each replay recorded
  watchdog            a collective held behind a kernel spinning on a host-mapped flag (3 s
                      limit of its own): the watchdog fails it within its 0.5 s deadline,
                      calls the Python callback, the next call raises; the flag then frees it
  percall-<size>      ncclshim's all_reduce against pynccl_style.py's, in-process,
                      interleaved call by call, host time per call (median): ratio <= 1.05
  graph-replay        a graph of 16 all_reduces captured through each, replayed
                      interleaved: replay time ratio within 1.05
  lean-<size>         ncclshim's all_reduce against python_lean.py's (the leanest
                      hand-written ctypes call), in-process, interleaved call by call,
                      host time per call (median): ratio <= 1.00 (OUTDIR/lean.csv)
  extension           the package's C extension (_fast) is what the calls run through
  python-work         diagnostics (always ok): ns of ncclshim's Python pair check, of the
                      pynccl-style argument building, of each torch accessor
Timings: OUTDIR/percall.csv, OUTDIR/graph.csv."""
import csv
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch

import ncclshim

try:
    import cupy
except Exception as e:  # its cases then fail, naming this
    cupy, CUPY_ERROR = None, e
from capture import captured_all_reduce
from pynccl_style import PyNcclStyle, take_turns
import python_lean

OUT = sys.argv[1]
START = time.monotonic()
BUDGET = float(os.environ.get("PY_BUDGET_S", "100"))
rows = []


def note(case, verdict, detail=""):
    rows.append((case, verdict, detail))
    print("%-26s %s %s" % (case, verdict, detail), flush=True)


def run(case, fn):
    if time.monotonic() - START > BUDGET:
        return note(case, "FAIL: not run, time budget spent")
    try:
        detail = fn()
        note(case, "ok", detail or "")
    except Exception as e:  # a case's failure is its verdict
        note(case, "FAIL: %s: %s" % (type(e).__name__, str(e).replace("\n", " ")[:300]))


def import_time():
    code = "import time; t = time.perf_counter(); import ncclshim; a = time.perf_counter(); " \
           "ncclshim.Communicator; print((a - t) * 1000, (time.perf_counter() - t) * 1000)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(7)]
    return "median %.1f ms of 7 (python -c 'import ncclshim', nothing loaded); with the " \
        "communicator layer (first ncclshim.Communicator) %.1f ms" % (
            statistics.median(float(r[0]) for r in runs),
            statistics.median(float(r[1]) for r in runs))


# ---- correctness ----------------------------------------------------------------------

N = 1024


def check_collectives(prefix, mod, comm, stream, sync):
    """Every collective on a one-rank communicator: the result equals the input."""
    def fresh(n=N):
        x, y = mod.arange(n, dtype=mod.float32) + 1, mod.zeros(n, dtype=mod.float32)
        sync()  # made on the framework's current stream; the call runs on `stream`
        return x, y

    def equal(a, b):
        sync()
        return bool((a == b).all())

    cases = {
        "all_reduce": lambda x, y: comm.all_reduce(x, y, stream=stream),
        "broadcast": lambda x, y: comm.broadcast(x, y, root=0, stream=stream),
        "reduce": lambda x, y: comm.reduce(x, y, root=0, op="max", stream=stream),
        "all_gather": lambda x, y: comm.all_gather(x, y, stream=stream),
        "reduce_scatter": lambda x, y: comm.reduce_scatter(x, y, stream=stream),
        "all_to_all": lambda x, y: comm.all_to_all(x, y, stream=stream),
        "gather": lambda x, y: comm.gather(x, y, root=0, stream=stream),
        "scatter": lambda x, y: comm.scatter(x, y, root=0, stream=stream),
    }

    def sendrecv(x, y):
        with comm.group():
            comm.send(x, peer=0, stream=stream)
            comm.recv(y, peer=0, stream=stream)
    cases["send_recv"] = sendrecv
    for name, call in cases.items():
        def one(call=call):
            x, y = fresh()
            call(x, y)
            if not equal(x, y):
                raise AssertionError("result differs from the input")
            return "mode %s" % comm.mode
        run("%s-%s-%s" % (prefix, name, comm.mode), one)


def torch_collectives():
    s = torch.cuda.Stream()
    for mode in ("blocking", "nonblocking", "split-blocking"):
        with ncclshim.Communicator(1, 0, ncclshim.unique_id(), mode=mode, timeout=20) as comm:
            check_collectives("torch", _TorchMod, comm, s, torch.cuda.synchronize)


class _TorchMod:
    float32 = torch.float32

    @staticmethod
    def arange(n, dtype):
        return torch.arange(n, dtype=dtype, device="cuda")

    @staticmethod
    def zeros(n, dtype):
        return torch.zeros(n, dtype=dtype, device="cuda")


def cupy_collectives():
    if cupy is None:
        return note("cupy", "FAIL: import cupy: %s" % CUPY_ERROR)
    s = cupy.cuda.Stream(non_blocking=True)
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
        with s:
            check_collectives("cupy", cupy, comm, s, cupy.cuda.Device().synchronize)


JAX_CHECK = r"""
import jax, jax.numpy as jnp
import torch  # the receive buffer: a JAX array is immutable (its interface says read-only)
import ncclshim
x = jnp.arange(1024, dtype=jnp.float32) + 1
x.block_until_ready()
assert "gpu" in str(x.devices()).lower() or "cuda" in str(x.devices()).lower(), x.devices()
y = torch.zeros(1024, dtype=torch.float32, device="cuda")
with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
    comm.all_reduce(x, y, stream=0)  # JAX has no current stream to offer: the legacy one
    torch.cuda.synchronize()  # JAX's own waits know nothing of NCCL's work
    try:
        comm.all_reduce(x, stream=0)  # in place: NCCL would write JAX's buffer
        raise AssertionError("a read-only JAX array was written")
    except BufferError as e:
        refused = str(e)
assert (jax.device_get(x) == y.cpu().numpy()).all(), "jax all_reduce differs"
print("through", "__cuda_array_interface__" if hasattr(x, "__cuda_array_interface__")
      else "__dlpack__", "| in place refused:", refused[:60])
"""


def jax_all_reduce():
    """JAX arrays (their own process: JAX takes GPU memory its own way)."""
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    proc = subprocess.run([sys.executable, "-c", JAX_CHECK], env=env,
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr or proc.stdout).strip().splitlines()[-1][:300])
    return proc.stdout.strip()


def dlpack():
    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()
    x = torch.arange(N, dtype=torch.float32, device="cuda") + 1
    y = torch.zeros(N, dtype=torch.float32, device="cuda")
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
        comm.all_reduce(OnlyDLPack(x), OnlyDLPack(y), stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert torch.equal(x, y), "dlpack all_reduce differs"


def cpu_refused():
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
        try:
            comm.all_reduce(torch.ones(4))
        except BufferError as e:
            return str(e)
    raise AssertionError("a CPU tensor was accepted")


def graph_capture():
    x = torch.zeros(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
        g = captured_all_reduce(torch, comm, x, y)
        for k in (3.0, 7.0):
            x.fill_(k)
            g.replay()
            torch.cuda.synchronize()
            assert bool((y == k).all()), "replay %s gave %s" % (k, y[:4].tolist())
        del g
    return "captured and replayed twice"


def symmetric():
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
        with comm.symmetric(1 << 20) as buf:
            t = torch.as_tensor(buf, device="cuda").view(torch.float32)
            t.copy_(torch.arange(t.numel(), dtype=torch.float32, device="cuda"))
            out = torch.zeros_like(t)
            comm.all_reduce(buf.view("float32"), out)
            torch.cuda.synchronize()
            assert torch.equal(t, out), "symmetric all_reduce differs"
            return "%d bytes, window 0x%x" % (buf.nbytes, buf.window or 0)


SPIN = r"""
extern "C" __global__ void spin(volatile int *flag, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*flag == 0 && now - start < limit_ns);
}
"""


def spin_kernel():
    """The spinning kernel: CuPy's RawKernel (NVRTC), or else nvcc's cubin loaded by CuPy."""
    kernel = cupy.RawKernel(SPIN, "spin")
    try:
        kernel.compile()  # NVRTC now, not at the launch
        return kernel, "NVRTC"
    except Exception as e:  # no NVRTC in this venv: nvcc, as the host has it
        src = os.path.join(tempfile.mkdtemp(prefix="ncclshim-spin-"), "spin.cu")
        with open(src, "w") as f:
            f.write(SPIN)
        cubin = src[:-3] + ".cubin"
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        proc = subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", cubin, src],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError("RawKernel: %s; nvcc: %s" % (e, proc.stderr[-200:]))
        kernel = cupy.RawModule(path=cubin).get_function("spin")
        shutil.rmtree(os.path.dirname(src))
        return kernel, "nvcc"


def mapped_flag(rt):
    """A host-mapped int (cudaHostAlloc, cudaHostAllocMapped = 2) and the pointer the kernel
    reads it through. Under unified addressing (every 64-bit CUDA system) the host pointer
    is a device pointer too; cudaHostGetDevicePointer only where this CuPy has it."""
    host = rt.hostAlloc(4, getattr(rt, "hostAllocMapped", 2))
    get = getattr(rt, "hostGetDevicePointer", None)
    return host, (get(host, 0) if get else host), \
        "hostGetDevicePointer" if get else "host pointer (UVA)"


def watchdog():
    if cupy is None:
        raise RuntimeError("the spinning kernel needs CuPy: %s" % CUPY_ERROR)
    kernel, built = spin_kernel()
    rt = cupy.cuda.runtime
    host, dev, through = mapped_flag(rt)
    flag = ctypes.c_int.from_address(host)
    flag.value = 0
    fired = threading.Event()
    seen = {}

    def on_failure(comm, error):
        seen["error"] = error
        seen["after"] = time.monotonic() - seen["start"]
        fired.set()
    x = torch.ones(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    try:
        with ncclshim.Watchdog(on_failure=on_failure, interval=0.01) as dog:
            comm = ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20)
            try:  # whatever happens, the kernel is released before the abort
                comm.watch(dog, timeout=0.5)
                s = torch.cuda.Stream()
                ext = cupy.cuda.ExternalStream(s.cuda_stream)
                with ext:  # RawKernel launches on CuPy's current stream
                    kernel((1,), (1,), (cupy.uint64(dev), cupy.uint64(3_000_000_000)))
                seen["start"] = time.monotonic()
                comm.all_reduce(x, y, stream=s)
                if not fired.wait(5):
                    raise AssertionError("the watchdog did not fire within 5 s")
                flag.value = 1  # release the kernel before the abort's cudaFree waits on it
                try:
                    comm.all_reduce(x, y, stream=s)
                    raise AssertionError("a call after the failure was accepted")
                except ncclshim.NcclshimError as e:
                    after = str(e)
                assert 0.4 <= seen["after"] <= 3.0, "fired after %.2f s" % seen["after"]
            finally:
                flag.value = 1
                comm.abort(timeout=10)
        return "fired after %.2f s: %s | next call: %s | kernel %s, flag %s" % (
            seen["after"], str(seen["error"])[:120], after[:80], built, through)
    finally:
        torch.cuda.synchronize()
        rt.freeHost(host)


def watchdog_graph():
    """A watched communicator's collectives captured in a graph, each replay recorded with
    ncclshim_comm_record_graph: no failure, right results."""
    x = torch.zeros(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    with ncclshim.Watchdog(interval=0.01) as dog:
        with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as comm:
            comm.watch(dog, timeout=5)
            g = captured_all_reduce(torch, comm, x, y, calls=4)  # recorded as captured
            for k in (2.0, 5.0, 9.0):
                x.fill_(k)
                g.replay()
                comm.record_graph(torch.cuda.current_stream(), "decode-step", 4)
                torch.cuda.synchronize()
                assert bool((y == k).all()), "replay %s gave %s" % (k, y[:4].tolist())
            assert comm.state == "ready" and not dog.failures, (comm.state, dog.failures)
            del g
    return "3 replays recorded, no failure"


# ---- cost against the pynccl-style wrapper ---------------------------------------------

SIZES = [8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864]


def percall(theirs, ours_by_mode, csvw):
    s = torch.cuda.Stream()
    for size in SIZES:
        n = max(2, size // 4)
        x = torch.ones(n, device="cuda")
        y = torch.zeros(n, device="cuda")
        verdicts = []
        for mode, ours in ours_by_mode.items():
            reps = 3000
            t_ours, t_theirs = take_turns(ours, theirs, x, y, s, reps)
            mo, mt = statistics.median(t_ours) / 1e3, statistics.median(t_theirs) / 1e3
            ratio = mo / mt
            csvw.writerow([size, mode, reps, "%.3f" % mo, "%.3f" % mt, "%.4f" % ratio,
                           "%.3f" % (statistics.mean(t_ours) / 1e3),
                           "%.3f" % (statistics.mean(t_theirs) / 1e3)])
            verdicts.append((mode, ratio, mo, mt))
        bad = [v for v in verdicts if v[1] > 1.05]
        detail = "; ".join("%s %.3f (%.2f vs %.2f us)" % v for v in verdicts)
        note("percall-%d" % size, "FAIL: ratio > 1.05" if bad else "ok", detail)


def lean():
    """python_lean.py's comparison (lean.csv), one summary line per size."""
    s = torch.cuda.Stream()
    with ncclshim.Communicator(1, 0, ncclshim.unique_id(), timeout=20) as ours:
        path = ncclshim._clib.lib().ncclshim_nccl_path(ncclshim._clib.nccl()).decode()
        rows = python_lean.compare(ours, path, {torch.float32: 7}, lambda n: (
            torch.ones(n, device="cuda"), torch.zeros(n, device="cuda")), s, OUT,
            int(os.environ.get("LEAN_REPS", "3000")))
    for size, mo, mt in rows:
        note("lean-%d" % size, "ok" if mo <= mt * python_lean.GOAL else
             "FAIL: ratio > %.2f" % python_lean.GOAL,
             "%.0f vs %.0f ns, ratio %.3f" % (mo, mt, mo / mt))
    return "NCCL %s" % path


def extension():
    fast = ncclshim._clib.fast_module()
    if fast is None or not issubclass(ncclshim.Communicator, fast.Calls):
        raise RuntimeError("the calls run on the pure Python path: no extension loaded")
    return fast.__file__


def python_work():
    """Diagnostics for the percall cases (always ok): the host time of each piece of Python
    work on two 8-byte CUDA tensors, best of 5 loops of 20000, ns."""
    x, y = torch.ones(2, device="cuda"), torch.zeros(2, device="cuda")
    pair = ncclshim.buffers.pair
    vp = ctypes.c_void_p
    pieces = [
        ("ncclshim Python pair check", lambda: pair(x, "send", False, y, "recv", True, 1)),
        ("pynccl-style arguments", lambda: (vp(x.data_ptr()), vp(y.data_ptr()), x.numel(),
                                            str(x.dtype), vp(0))),
        ("is_cuda", lambda: x.is_cuda), ("is_contiguous()", lambda: x.is_contiguous()),
        ("dtype", lambda: x.dtype), ("numel()", lambda: x.numel()),
        ("data_ptr()", lambda: x.data_ptr()), ("empty lambda", lambda: None)]
    clock, out = time.perf_counter_ns, []
    for name, fn in pieces:
        best = None
        for _ in range(5):
            a = clock()
            for _ in range(20000):
                fn()
            t = (clock() - a) / 20000
            best = t if best is None else min(best, t)
        out.append("%s %.0f" % (name, best))
    return "; ".join(out)


def graph_replay(theirs, ours, csvw):
    x = torch.ones(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")
    graphs = {name: captured_all_reduce(torch, impl, x, y, calls=16, explicit_stream=True)
              for name, impl in (("ncclshim", ours), ("pynccl-style", theirs))}
    times = {k: [] for k in graphs}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for block in range(40):
        order = list(graphs.items())
        for name, g in order if block % 2 else order[::-1]:  # neither always first
            start.record()
            for _ in range(20):
                g.replay()
            end.record()
            end.synchronize()
            if block >= 5:
                times[name].append(start.elapsed_time(end) * 1000 / 20)
    mo, mt = statistics.median(times["ncclshim"]), statistics.median(times["pynccl-style"])
    for name, ts in times.items():
        csvw.writerow([name, len(ts), "%.3f" % statistics.median(ts), "%.3f" % min(ts)])
    ratio = mo / mt
    detail = "replay of 16 all_reduces: %.2f vs %.2f us, ratio %.3f" % (mo, mt, ratio)
    note("graph-replay", "ok" if 1 / 1.05 <= ratio <= 1.05 else "FAIL: " + detail, detail)
    del graphs


def cost():
    path = ncclshim._clib.lib().ncclshim_nccl_path(ncclshim._clib.nccl()).decode()
    theirs = PyNcclStyle(path)
    ours = {m: ncclshim.Communicator(1, 0, ncclshim.unique_id(), mode=m, timeout=20)
            for m in ("split-blocking", "blocking")}
    try:
        with open(os.path.join(OUT, "percall.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["size_bytes", "mode", "calls", "ncclshim_median_us",
                        "pynccl_median_us", "ratio", "ncclshim_mean_us", "pynccl_mean_us"])
            percall(theirs, ours, w)
        with open(os.path.join(OUT, "graph.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["wrapper", "blocks", "median_us_per_replay", "min_us_per_replay"])
            graph_replay(theirs, ours["split-blocking"], w)
    finally:
        for c in ours.values():
            c.close()
        theirs.close()
    return "NCCL %s" % path


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    print("ncclshim loads %s" % ncclshim._clib.loaded_text(), flush=True)
    run("import", import_time)
    torch_collectives()
    cupy_collectives()
    run("dlpack", dlpack)
    run("jax-all_reduce", jax_all_reduce)
    run("cpu-refused", cpu_refused)
    run("graph-capture", graph_capture)
    run("symmetric", symmetric)
    run("watchdog", watchdog)
    if ncclshim._clib.has("ncclshim_comm_record_graph"):  # from the graphs issue's merge on
        run("watchdog-graph", watchdog_graph)
    run("extension", extension)
    run("lean", lean)
    run("cost", cost)
    run("python-work", python_work)
    with open(os.path.join(OUT, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "verdict", "detail"])
        w.writerows(rows)
    failed = [r for r in rows if r[1] != "ok"]
    print("python: %d cases, %d failed, %.0f s" % (len(rows), len(failed),
                                                   time.monotonic() - START))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""A one-rank torch.distributed job (NCCL backend, one GPU) that captures an all-gather with
torch.cuda.graph (global capture mode) and replays it three times, for the recorder's
"captured" mark (tests/gpu/dropin/hangdump.sh runs it under the drop-in, LD_PRELOAD).

    python3 torch_capture.py

Out of place, so that NCCL launches a kernel even on one rank (an in-place collective of one
rank does nothing, and the captured graph would be empty). Prints capture=ok and result=R (the
gathered value after the replays, 1.0) and exits 0; 77 without a GPU.
"""
import contextlib
import os
import sys
import tempfile


def main():
    import torch
    import torch.distributed as dist
    if not torch.cuda.is_available():
        return 77
    torch.cuda.set_device(0)
    store = tempfile.NamedTemporaryFile(delete=False)
    try:  # eager initialization where torch has it (2.3 and later)
        dist.init_process_group("nccl", init_method="file://" + store.name, rank=0,
                                world_size=1, device_id=torch.device("cuda", 0))
    except TypeError:
        dist.init_process_group("nccl", init_method="file://" + store.name, rank=0,
                                world_size=1)
    x = torch.ones(1 << 20, device="cuda")
    out = torch.zeros_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dist.all_gather_into_tensor(out, x)  # warm-up, outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    out.zero_()
    with torch.cuda.graph(graph):
        dist.all_gather_into_tensor(out, x)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    print("capture=ok", flush=True)
    print("result=%.1f" % out[-1].item(), flush=True)
    dist.destroy_process_group()
    with contextlib.suppress(FileNotFoundError):  # torch's FileStore may have removed it
        os.unlink(store.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

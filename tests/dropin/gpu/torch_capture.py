"""A one-rank torch.distributed job (NCCL backend, one GPU) that captures an all-reduce with
torch.cuda.graph (global capture mode) and replays it three times, for the recorder's
"captured" mark (bench/gpu/hangdump.sh runs it under the drop-in, LD_PRELOAD).

    python3 torch_capture.py

Prints capture=ok and result=R (the tensor's value after the replays; 1.0 on one rank) and
exits 0; 77 without a GPU.
"""
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
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dist.all_reduce(x)  # warm-up, outside the capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dist.all_reduce(x)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    print("capture=ok", flush=True)
    print("result=%.1f" % x[0].item(), flush=True)
    dist.destroy_process_group()
    os.unlink(store.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""torch.distributed all-reduce on every GPU, for the drop-in (tests/gpu/dropin/dropin.sh,
recorder.sh):
    python -m torch.distributed.run --nproc-per-node 2 torch_allreduce.py
Each rank prints "rank R: all-reduce ok (N rounds)" when every result is right.

With SKIP_RANK=R and NCCL_TIMEOUT_S=T, rank R skips the last all-reduce and leaves (exit
status 0, its process group not destroyed); the other
ranks wait in that all-reduce until PyTorch's own watchdog, T seconds later (or sooner, on
NCCL's error for the peer that left), aborts the communicator and ends the process
(ncclCommAbort, then abort()). No signal is sent; the flight recorder dumps on the aborts,
SIGABRT and at exit (and on the launcher's SIGTERM, should a rank still be there), and its
dumps must name rank R."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
skip_rank = int(os.environ.get("SKIP_RANK", "-1"))
timeout_s = int(os.environ.get("NCCL_TIMEOUT_S", "0"))
torch.cuda.set_device(local_rank)
options = {"timeout": datetime.timedelta(seconds=timeout_s)} if timeout_s else {}
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank), **options)
rank, world = dist.get_rank(), dist.get_world_size()
rounds = 20
for i in range(rounds):
    if rank == skip_rank and i == rounds - 1:
        print("rank %d: skipping all-reduce %d and leaving" % (rank, i), flush=True)
        time.sleep(2)
        sys.exit(0)
    x = torch.full((1 << 20,), float(rank + 1 + i), device="cuda")
    dist.all_reduce(x)
    expected = world * (world + 1) / 2 + world * i
    assert torch.all(x == expected).item(), "rank %d round %d: %s" % (rank, i, x[:4])
torch.cuda.synchronize()
print("rank %d: all-reduce ok (%d rounds)" % (rank, rounds), flush=True)
dist.destroy_process_group()

"""torch.distributed all-reduce on every GPU, for the drop-in under LD_PRELOAD
(bench/gpu/dropin.sh):  python -m torch.distributed.run --nproc-per-node 2 torch_allreduce.py
Each rank prints "rank R: all-reduce ok (N rounds)" when every result is right."""
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
rank, world = dist.get_rank(), dist.get_world_size()
rounds = 20
for i in range(rounds):
    x = torch.full((1 << 20,), float(rank + 1 + i), device="cuda")
    dist.all_reduce(x)
    expected = world * (world + 1) / 2 + world * i
    assert torch.all(x == expected).item(), "rank %d round %d: %s" % (rank, i, x[:4])
torch.cuda.synchronize()
print("rank %d: all-reduce ok (%d rounds)" % (rank, rounds), flush=True)
dist.destroy_process_group()

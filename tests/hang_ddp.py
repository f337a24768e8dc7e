# SPDX-License-Identifier: BSD-3-Clause
# A PyTorch DDP (gloo) program whose rank 1 sleeps in Python at step 3
# while the others wait for it in c10d: tests/cli-stall.sh and
# bench/hang.sh.  Its rank and size from Open MPI's when RANK and
# WORLD_SIZE are not set; MASTER_ADDR and MASTER_PORT from the caller.
import os, time, torch, torch.distributed as d
os.environ.setdefault("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
os.environ.setdefault("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
d.init_process_group("gloo")
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
for k in range(1, 10000):
    if k == 3 and d.get_rank() == 1:
        time.sleep(120)
    m(torch.ones(4, 8)).sum().backward()
    if d.get_rank() == 0:
        print(f"step {k} of 9999", flush=True)
    time.sleep(0.1)

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ResNet training throughput with DistributedDataParallel (examples/resnet-ddp).

One process per rank, started by gpurun's `pytorch-ddp` template, which gives
each rank torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT, ...), GPURUN_INIT_METHOD and GPURUN_RENDEZVOUS_TIMEOUT.  The images are synthetic,
made in memory (nothing is downloaded; weights=None).  Rank 0 prints the
figures of merit:

    DDP images_per_s: 1234.5       whole job, after the warm-up steps
    DDP step_ms: 25.9              mean time of one step after the warm-up
    DDP allreduce_share: 0.12      one all-reduce of every gradient / step time
    DDP done

and, for gpurun's progress, a line per step:

    step 6 of 35 loss 6.9101 images_per_s 412.7
"""
import argparse
import datetime
import os
import sys
import time


def env_int(name, fallback):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else fallback


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", help="a torchvision.models name (resnet50, resnet18, ...)")
    ap.add_argument("--batch-size", type=int, default=32, help="images per rank and step")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=30, help="measured steps, after the warm-up")
    ap.add_argument("--warmup", type=int, default=5, help="steps not measured")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16", "fp16"],
                    help="fp32; tf32 (GPUs: TF32 matmul/conv); bf16/fp16: autocast")
    a = ap.parse_args()

    import torch
    import torch.distributed as dist
    import torchvision

    rank = env_int("RANK", env_int("GPURUN_RANK", 0))
    world = env_int("WORLD_SIZE", 1)
    local = env_int("LOCAL_RANK", env_int("GPURUN_LOCAL_RANK", 0))
    # gpurun's rendezvous (GPURUN_RENDEZVOUS): its own store (env://), a
    # file in the private run folder (file://, no port), or rank 0's store.
    method = os.environ.get("GPURUN_INIT_METHOD", "env://")
    if method == "env://":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    else:
        where = method
    bound = float(os.environ.get("GPURUN_RENDEZVOUS_TIMEOUT", "180"))
    threads = env_int("OMP_NUM_THREADS", 0)
    if threads > 0:
        torch.set_num_threads(threads)

    # gpurun made only this rank's GPUs visible: the first one is its own.
    gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if gpu:
        torch.cuda.set_device(0 if "CUDA_VISIBLE_DEVICES" in os.environ else local)
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    backend = "nccl" if gpu else "gloo"

    # A rendezvous that cannot happen (the port taken, a rank that never
    # comes) ends within the bound with the address named, never hangs.
    t0 = time.time()
    try:
        dist.init_process_group(backend, init_method=method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=bound))
        dist.barrier()
    except Exception as e:  # RuntimeError, or a timeout of the store
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"gpurun-ddp: rank {rank} of {world}: rendezvous at {where} ({backend}) failed after "
              f"{time.time() - t0:.1f} s (bound {bound:g} s, GPURUN_RENDEZVOUS_TIMEOUT): {first}",
              file=sys.stderr, flush=True)
        sys.exit(1)

    if a.precision == "tf32" and gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    elif gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    if amp_dtype is torch.float16 and not gpu:
        amp_dtype = torch.bfloat16  # CPU autocast has bf16 only
        if rank == 0:
            print("gpurun-ddp: fp16 autocast needs a GPU; bf16 on CPU", flush=True)

    torch.manual_seed(1234 + rank)
    model = getattr(torchvision.models, a.model)(weights=None, num_classes=a.classes).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if gpu else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler(enabled=gpu and amp_dtype is torch.float16)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=device)
    labels = torch.randint(0, a.classes, (a.batch_size,), device=device)
    if rank == 0:
        print(f"DDP model={a.model} ranks={world} backend={backend} device={device.type} batch={a.batch_size} "
              f"image={a.image_size} precision={a.precision} steps={a.steps} warmup={a.warmup}", flush=True)

    def sync():
        if gpu:
            torch.cuda.synchronize()

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is None:
            loss = loss_fn(ddp(images), labels)
        else:
            with torch.autocast(device.type, dtype=amp_dtype):
                loss = loss_fn(ddp(images), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    # A line per step from rank 0, for gpurun's progress (the template's
    # progress regex): the step, of how many, the loss, and the images per
    # second of the phase so far (warm-up, then the measured steps).
    total = a.warmup + a.steps

    def say(k, loss, images, since):
        if rank == 0:
            ips = images / max(time.perf_counter() - since, 1e-9)
            print(f"step {k} of {total} loss {loss.item():.4f} images_per_s {ips:.1f}", flush=True)

    warm_start = time.perf_counter()
    for i in range(a.warmup):
        loss = step()
        say(i + 1, loss, a.batch_size * world * (i + 1), warm_start)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for i in range(a.steps):
        loss = step()
        say(a.warmup + i + 1, loss, a.batch_size * world * (i + 1), start)
    sync()
    dist.barrier()
    elapsed = time.perf_counter() - start

    # One all-reduce of every gradient, as DDP does each step (in buckets,
    # overlapped with the backward pass): its share of a step is what the
    # network costs at most.
    flat = torch.cat([p.grad.reshape(-1) for p in ddp.parameters() if p.grad is not None])
    dist.all_reduce(flat)
    sync()
    reps = 3
    t = time.perf_counter()
    for _ in range(reps):
        dist.all_reduce(flat)
    sync()
    allreduce_s = (time.perf_counter() - t) / reps

    if rank == 0 and a.steps > 0:
        step_s = elapsed / a.steps
        print(f"DDP images_per_s: {a.batch_size * world * a.steps / elapsed:.3f}")
        print(f"DDP step_ms: {step_s * 1e3:.3f}")
        print(f"DDP allreduce_ms: {allreduce_s * 1e3:.3f}")
        print(f"DDP allreduce_share: {min(allreduce_s / step_s, 1.0):.4f}")
        print("DDP done", flush=True)
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not destroy_process_group() nor the interpreter's own exit: with DDP's
    # reducer alive, ProcessGroupGloo's destructor can deadlock on its work
    # queue (Debian's torch 1.13): every rank has passed the barrier, so
    # nothing is left to tear down cleanly.
    os._exit(0)


if __name__ == "__main__":
    main()

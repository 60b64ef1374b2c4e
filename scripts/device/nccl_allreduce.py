#!/usr/bin/env python3
"""NCCL's allreduce through PyTorch (torch.distributed), one process per GPU, the baseline of
Treeline's GPU benchmark in the same device call: f32 sum, sizes min..max by factor, warm-up and
timed iterations as DeviceBench, every result checked. Appends rows to the CSV that
DeviceBench writes (columns ranks,mode,gpus,sync,bytes,algo,chosen,time_us,algbw_gbps,
busbw_gbps,wrong) with mode=nccl. NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0.

usage: nccl_allreduce.py --gpus K --csv FILE [-b 8] [-e 4G] [-f 2] [-n 20] [-w 5]
"""
import argparse
import os
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def size(s):
    s = s.strip().upper()
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
    return int(s[:-1] if mul > 1 else s) * mul


def rank_main(rank, a, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=a.gpus)
    k = a.gpus
    rows = []
    b = size(a.b)
    while b <= size(a.e):
        count = max(1, b // 4)
        x = torch.full((count,), float(rank + 1), dtype=torch.float32, device="cuda")
        n = a.n if b < (256 << 20) else max(5, a.n // 5)
        for _ in range(a.w):
            x.fill_(float(rank + 1))
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(x)  # in place, as nccl-tests' out-of-place minus the copy
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) * 1e6 / n
        # check: one more allreduce of fresh inputs
        x.fill_(float(rank + 1))
        dist.all_reduce(x)
        expect = k * (k + 1) / 2
        wrong = int((x != expect).sum().item())
        algbw = count * 4 / us / 1e3
        busbw = algbw * 2 * (k - 1) / k if k > 1 else algbw
        if rank == 0:
            print(f"{count * 4:>12} {count:>12} {'nccl':>8} {us:10.1f} {algbw:9.2f} {busbw:9.2f} {wrong:7d}",
                  flush=True)
            rows.append(f"{k},nccl,{k},-,{count * 4},nccl,nccl,{us},{algbw},{busbw},{wrong}")
        del x
        b *= a.f
    if rank == 0:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a") as f:
            if new:
                f.write("ranks,mode,gpus,sync,bytes,algo,chosen,time_us,algbw_gbps,busbw_gbps,wrong\n")
            f.write("\n".join(rows) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--gpus", type=int, required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("-b", default="8")
    p.add_argument("-e", default="4G")
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    a = p.parse_args()
    print(f"# NCCL {torch.cuda.nccl.version()} allreduce through torch {torch.__version__}, "
          f"{a.gpus} GPU(s), NCCL_NVLS_ENABLE=0, f32 sum")
    print(f"{'size(B)':>12} {'count':>12} {'algo':>8} {'time(us)':>10} {'algbw':>9} {'busbw':>9} {'#wrong':>7}")
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(rank_main, args=(a, port), nprocs=a.gpus)

#!/usr/bin/env python3
"""The peers' side of scripts/bench/peers.sh: MPI_Allreduce (mpi4py) and Gloo
(torch.distributed) timed exactly as Treeline's PeerBench: per size, the same warm-up calls,
then every call timed on every rank; the slowest rank's median and p99 are reported. Rank r's
element i is 1 + r % 5 + i % 3 and every element of the result is checked. Warm-up: one call
timed alone (first_us: what a new size costs once), then batches of warmups(bytes) calls until
every rank has warmed the size for WARM_S (the sweep's first size: WARM_FIRST_S), agreed by an
allreduce after each batch. Prints CSV
rows system,dtype,ranks,bytes,iters,median_us,p99_us,wrong,first_us (rank 0).

  mpirun -n K python3 peers.py mpi f32 MIN MAX FACTOR
  python3 peers.py gloo K f32|bf16 MIN MAX FACTOR
"""
import math
import os
import socket
import sys
import time


WARM_S = float(os.environ.get("PEERS_WARM_MS", "200")) / 1e3
WARM_FIRST_S = max(WARM_S, float(os.environ.get("PEERS_WARM_FIRST_MS", "1000")) / 1e3)


def iterations(nbytes):
    """1000 timed calls up to 64 KiB (p99 is then the 10th slowest), fewer above, at least 5."""
    return int(max(5, min(1000, (256 << 20) // max(1, nbytes) // 4)))


def warmups(nbytes):
    """As PeerBench: 3000 untimed calls for small messages (the JVM's JIT needs them), 64 MiB's
    worth above; every system gets the same."""
    return int(max(2, min(3000, (64 << 20) // max(1, nbytes))))


def warm_s(nbytes, lo, elem):
    return WARM_FIRST_S if nbytes == max(lo, elem) else WARM_S


def sizes(lo, hi, factor, elem):
    b = max(lo, elem)
    while b <= hi:
        yield b
        b *= factor


def stats(each):
    each = sorted(each)
    return each[(len(each) - 1) // 2], each[int(math.ceil(0.99 * len(each))) - 1]


def run_mpi(dtype, lo, hi, factor):
    import numpy as np
    from mpi4py import MPI
    if dtype != "f32":
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(f"# mpi: no {dtype} in MPI_Allreduce; skipped", file=sys.stderr)
        return
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    for nbytes in sizes(lo, hi, factor, 4):
        count = nbytes // 4
        idx = np.arange(count)
        x = (1 + rank % 5 + idx % 3).astype(np.float32)
        y = np.empty_like(x)
        iters = iterations(nbytes)
        comm.Barrier()
        t1 = time.perf_counter_ns()
        comm.Allreduce(x, y, op=MPI.SUM)
        first = comm.allreduce((time.perf_counter_ns() - t1) / 1e3, op=MPI.MAX)
        start = time.perf_counter()
        while True:
            for _ in range(warmups(nbytes)):
                comm.Allreduce(x, y, op=MPI.SUM)
            more = int(time.perf_counter() - start < warm_s(nbytes, lo, 4))
            if not comm.allreduce(more, op=MPI.MAX):
                break
        comm.Barrier()
        each = []
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            comm.Allreduce(x, y, op=MPI.SUM)
            each.append((time.perf_counter_ns() - t0) / 1e3)
        want = sum(1 + r % 5 for r in range(n)) + n * (idx % 3)
        wrong = int(np.count_nonzero(y != want))
        med, p99 = stats(each)
        med = comm.allreduce(med, op=MPI.MAX)
        p99 = comm.allreduce(p99, op=MPI.MAX)
        wrong = comm.allreduce(wrong, op=MPI.SUM)
        if rank == 0:
            print(f"mpi,{dtype},{n},{nbytes},{iters},{med:.3f},{p99:.3f},{wrong},{first:.3f}",
                  flush=True)


def gloo_rank(rank, n, port, dtype, lo, hi, factor):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    elem = 4 if dtype == "f32" else 2
    for nbytes in sizes(lo, hi, factor, elem):
        count = nbytes // elem
        idx = torch.arange(count)
        base = (1 + rank % 5 + idx % 3).to(tdt)
        t = base.clone()
        iters = iterations(nbytes)
        try:
            dist.barrier()
            t1 = time.perf_counter_ns()
            dist.all_reduce(t)
            first = torch.tensor([(time.perf_counter_ns() - t1) / 1e3], dtype=torch.float64)
            dist.all_reduce(first, op=dist.ReduceOp.MAX)
            start = time.perf_counter()
            while True:
                for _ in range(warmups(nbytes)):
                    t.copy_(base)
                    dist.all_reduce(t)
                more = int(time.perf_counter() - start < warm_s(nbytes, lo, elem))
                more = torch.tensor([more])
                dist.all_reduce(more, op=dist.ReduceOp.MAX)
                if not int(more[0]):
                    break
        except RuntimeError as e:
            if rank == 0:
                print(f"# gloo: {dtype} all_reduce failed ({e}); skipped", file=sys.stderr)
            break
        dist.barrier()
        each = []
        for _ in range(iters):
            t.copy_(base)  # Gloo reduces in place: give it the input again (untimed)
            t0 = time.perf_counter_ns()
            dist.all_reduce(t)
            each.append((time.perf_counter_ns() - t0) / 1e3)
        want = (sum(1 + r % 5 for r in range(n)) + n * (idx % 3)).to(torch.float64)
        wrong = int((t.to(torch.float64) != want).sum())
        med, p99 = stats(each)
        agg = torch.tensor([med, p99], dtype=torch.float64)
        dist.all_reduce(agg, op=dist.ReduceOp.MAX)
        w = torch.tensor([wrong], dtype=torch.float64)
        dist.all_reduce(w)
        if rank == 0:
            print(f"gloo,{dtype},{n},{nbytes},{iters},{agg[0]:.3f},{agg[1]:.3f},{int(w[0])},"
                  f"{first[0]:.3f}", flush=True)
    dist.destroy_process_group()


def run_gloo(n, dtype, lo, hi, factor):
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(lambda_rank, args=(n, port, dtype, lo, hi, factor), nprocs=n, join=True)


def lambda_rank(rank, n, port, dtype, lo, hi, factor):
    gloo_rank(rank, n, port, dtype, lo, hi, factor)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "mpi":
        run_mpi(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "gloo":
        run_gloo(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                 int(sys.argv[6]))
    else:
        sys.exit("usage: peers.py mpi DTYPE MIN MAX FACTOR | gloo RANKS DTYPE MIN MAX FACTOR")

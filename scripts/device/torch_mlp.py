#!/usr/bin/env python3
"""PyTorch baseline for the GPU trainer, on the same GPU in the same call.

The same MLP (784-256-128-10 by default, --hidden to change it), batch, optimizer (SGD lr 0.05
decaying x0.85 per epoch, momentum 0.9), TF32 matmuls with f32 accumulation, Fashion-MNIST
resident on the GPU as uint8 (a batch is a gather through the epoch's permutation, divided by
255), no host sync inside an epoch. Modes: eager, and torch.compile (default and
reduce-overhead, the latter with CUDA graphs) where it works. Prints one line per epoch and a
`summary` line per mode (mean over the epochs after the first).

--gemm: times torch.matmul at GemmBench's shapes (TF32), the cuBLAS side of that comparison.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(d, dev):
    tr = torch.from_numpy(idx(os.path.join(d, "train-images-idx3-ubyte.gz")).reshape(60000, -1).copy())
    trl = torch.from_numpy(idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    te = torch.from_numpy(idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).reshape(10000, -1).copy())
    tel = torch.from_numpy(idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    return tr.to(dev), trl.to(dev), te.to(dev), tel.to(dev)


def model(hidden, dev):
    sizes = [784] + hidden + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(dev)


def run(mode, args, data, dev):
    torch.manual_seed(42)
    tr, trl, te, tel = data
    net = model(args.hidden, dev)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    fwd = net
    if mode != "eager":
        fwd = torch.compile(net, mode=None if mode == "compile" else mode)

    def step(x, y):
        loss = F.cross_entropy(fwd(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    n = tr.shape[0]
    steps = n // args.batch
    rows = []
    for epoch in range(1, args.epochs + 1):
        for g in opt.param_groups:
            g["lr"] = args.lr * 0.85 ** (epoch - 1)
        perm = torch.randperm(n, device=dev)
        lsum = torch.zeros((), device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for s in range(steps):
            i = perm[s * args.batch:(s + 1) * args.batch]
            x = tr[i].float().div_(255.0)
            lsum += step(x, trl[i])
        torch.cuda.synchronize()
        sec = time.perf_counter() - t0
        with torch.no_grad():
            acc = (fwd(te.float() / 255.0).argmax(1) == tel).float().mean().item()
        sps = steps * args.batch / sec
        rows.append((sec * 1e3 / steps, sps))
        print(f"torch {mode:16s} epoch {epoch}/{args.epochs}  loss {lsum.item() / steps:.4f}  "
              f"test acc {acc:.4f}  {sps:9.0f} samples/s  {sec:.2f} s  step {sec * 1e3 / steps:.4f} ms",
              flush=True)
    tail = rows[1:] if len(rows) > 1 else rows
    print(f"summary torch mode={mode} hidden={','.join(map(str, args.hidden))} batch={args.batch} "
          f"step_ms={sum(r[0] for r in tail) / len(tail):.4f} "
          f"samples_per_s={sum(r[1] for r in tail) / len(tail):.0f} test_acc={acc:.4f}", flush=True)


SHAPES = [  # as GemmBench: name, m, n, k, transA, transB
    ("mlp-fwd1", 128, 256, 784, False, False), ("mlp-fwd2", 128, 128, 256, False, False),
    ("mlp-fwd3", 128, 10, 128, False, False), ("mlp-dW1", 784, 256, 128, True, False),
    ("mlp-dW2", 256, 128, 128, True, False), ("mlp-dX2", 128, 256, 128, False, True),
    ("20m-fwd1", 512, 4096, 784, False, False), ("20m-fwd2", 512, 4096, 4096, False, False),
    ("20m-dW1", 784, 4096, 512, True, False),
    ("20m-dW2", 4096, 4096, 512, True, False), ("20m-dX2", 512, 4096, 4096, False, True),
    ("square-4096", 4096, 4096, 4096, False, False),
]


def gemm(dev, reps):
    for name, m, n, k, ta, tb in SHAPES:
        a = torch.full((k, m) if ta else (m, k), 0.5, device=dev)
        b = torch.full((n, k) if tb else (k, n), 0.5, device=dev)
        aa = a.t() if ta else a
        bb = b.t() if tb else b
        out = torch.empty(m, n, device=dev)
        for _ in range(5):
            torch.matmul(aa, bb, out=out)
        r = max(5, reps // 5) if (k >= 4096 and m >= 4096) else reps
        times = []
        for _ in range(7):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(r):
                torch.matmul(aa, bb, out=out)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / r)
        t = sorted(times)[3]
        print(f"torch-gemm {name:12s} {m:5d} {n:5d} {k:5d} {str(ta):5s} {str(tb):5s} {t:9.4f} ms "
              f"{2.0 * m * n * k / (t * 1e-3) / 1e12:7.2f} TFLOP/s", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--hidden", default="256,128")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--modes", default="eager,compile,reduce-overhead")
    p.add_argument("--gemm", action="store_true")
    p.add_argument("--reps", type=int, default=50)
    args = p.parse_args()
    args.hidden = [int(h) for h in args.hidden.split(",")]
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}", flush=True)
    if args.gemm:
        gemm(dev, args.reps)
        return
    data = load(args.data, dev)
    for mode in args.modes.split(","):
        try:
            run(mode, args, data, dev)
        except Exception as e:  # torch.compile may lack a compiler there: say so, go on
            print(f"torch {mode}: failed: {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

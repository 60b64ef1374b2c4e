#!/usr/bin/env python3
"""Baselines measured in the same device call as Treeline's kernels: the device-to-device copy
and what a PyTorch user would write to reduce k inputs (torch.sum over the stacked inputs), as
bytes read + written per second, median of CUDA-event-timed repetitions. Writes CSV to argv[1].
NVLink multicast stays off (NCCL_NVLS_ENABLE=0); no NCCL is used here."""
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch

out = sys.argv[1] if len(sys.argv) > 1 else "torch-baselines.csv"
rows = ["bytes,kernel,type,inputs,ms,gbps"]


def median_ms(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


print(torch.cuda.get_device_name(0), "torch", torch.__version__)
for nbytes in (64 << 20, 1 << 30):
    reps = 10 if nbytes >= (1 << 30) else 40
    src = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), reps)
    bw = 2.0 * nbytes / (ms / 1e3) / 1e9
    print(f"{nbytes:>12} copy   -    1 {ms:9.3f} ms {bw:8.0f} GB/s")
    rows.append(f"{nbytes},copy,-,1,{ms},{bw}")
    del src, dst
    for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        el = torch.tensor([], dtype=dtype).element_size()
        for k in (2, 4, 8):
            stacked = torch.ones((k, nbytes // el), dtype=dtype, device="cuda")
            res = torch.empty(nbytes // el, dtype=dtype, device="cuda")
            ms = median_ms(lambda: torch.sum(stacked, dim=0, out=res), reps)
            bw = (k + 1.0) * nbytes / (ms / 1e3) / 1e9
            print(f"{nbytes:>12} torch.sum {name:4} {k} {ms:9.3f} ms {bw:8.0f} GB/s")
            rows.append(f"{nbytes},torch.sum,{name},{k},{ms},{bw}")
            del stacked, res
            torch.cuda.empty_cache()
with open(out, "w") as f:
    f.write("\n".join(rows) + "\n")
print("wrote", out)

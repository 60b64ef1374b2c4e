package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemsetD32;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * TF32 GEMM throughput of {@link TrainingKernels#gemm} at the trainer's shapes (the default
 * 784-256-128-10 model at batch 128 and the 20M-parameter 784-4096-4096-10 at batch 512:
 * forward, input gradient, weight gradient) and at 4096^3. Each shape: 5 warm-up launches, then
 * 7 timed rounds of {@code reps} back-to-back launches between two CUDA events; the median round
 * gives ms per GEMM and TFLOP/s ({@code 2 m n k}). {@code scripts/device/torch_mlp.py --gemm}
 * times {@code torch.matmul} at the same shapes.
 *
 * <p>Usage: {@code GemmBench [reps, default 50]}; prints {@code gemm NAME m n k tA tB ms TFLOP/s
 * PATH} (PATH: tma, wgmma or wmma, the kernels {@link TrainingKernels#gemm} picked) and, on a
 * compute capability 9.0 device, {@code gemm-wgmma ...} (the cp.async wgmma kernels, where TMA
 * is the default) and {@code gemm-wmma ...} for the kernels below the default alone at that
 * shape. The first line says which GEMM kernels run and why not TMA where they do not.
 */
public final class GemmBench {
  private GemmBench() {
  }

  /** name, m, n, k, transA, transB. */
  static final Object[][] SHAPES = {
    {"mlp-fwd1", 128, 256, 784, false, false},
    {"mlp-fwd2", 128, 128, 256, false, false},
    {"mlp-fwd3", 128, 10, 128, false, false},
    {"mlp-dW1", 784, 256, 128, true, false},
    {"mlp-dW2", 256, 128, 128, true, false},
    {"mlp-dX2", 128, 256, 128, false, true},
    {"20m-fwd1", 512, 4096, 784, false, false},
    {"20m-fwd2", 512, 4096, 4096, false, false},
    {"20m-dW1", 784, 4096, 512, true, false},
    {"20m-dW2", 4096, 4096, 512, true, false},
    {"20m-dX2", 512, 4096, 4096, false, true},
    {"square-4096", 4096, 4096, 4096, false, false},
  };

  public static void main(String[] args) throws Exception {
    int reps = args.length > 0 ? Integer.parseInt(args[0]) : 50;
    try (CudaModule module = new CudaModule(0)) {
      TrainingKernels k = new TrainingKernels(module);
      System.out.println("gemm kernels: " + k.gemmPath()
          + (k.tmaAbsent() != null ? " (TMA off: " + k.tmaAbsent() + ")" : ""));
      CUstream stream = new CUstream();
      cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
      CUevent start = new CUevent();
      CUevent stop = new CUevent();
      cuEventCreate(start, 0);
      cuEventCreate(stop, 0);
      float[] ms = new float[1];
      for (Object[] s : SHAPES) {
        int m = (Integer) s[1];
        int n = (Integer) s[2];
        int kk = (Integer) s[3];
        boolean ta = (Boolean) s[4];
        boolean tb = (Boolean) s[5];
        CUdeviceptr a = alloc((long) m * kk);
        CUdeviceptr b = alloc((long) kk * n);
        CUdeviceptr c = alloc((long) m * n);
        long pa = DevicePointers.address(a);
        long pb = DevicePointers.address(b);
        long pc = DevicePointers.address(c);
        int lda = ta ? m : kk;
        int ldb = tb ? kk : n;
        // the default path (TMA or wgmma where TrainingKernels picks them), then, on a 9.0
        // device, the kernels below it alone at the same shape for same-call ratios
        List<String> paths = new ArrayList<>();
        paths.add(k.gemmPath());
        if (k.tmaGemm()) {
          paths.add("wgmma");
        }
        if (k.hopperGemm()) {
          paths.add("wmma");
        }
        for (String path : paths) {
          k.setHopperGemm(!path.equals("wmma"));
          k.setTmaGemm(path.equals("tma"));
          boolean hopper = k.hopperPlan(pa, ta, lda, pb, tb, ldb, m, n, kk) != null;
          for (int i = 0; i < 5; i++) {
            k.gemm(pa, ta, lda, pb, tb, ldb, pc, n, m, n, kk, 0, false, 0, 0, stream);
          }
          int r = kk >= 4096 && m >= 4096 ? Math.max(5, reps / 5) : reps;
          double[] rounds = new double[7];
          for (int round = 0; round < rounds.length; round++) {
            cuEventRecord(start, stream);
            for (int i = 0; i < r; i++) {
              k.gemm(pa, ta, lda, pb, tb, ldb, pc, n, m, n, kk, 0, false, 0, 0, stream);
            }
            cuEventRecord(stop, stream);
            cuEventSynchronize(stop);
            cuEventElapsedTime(ms, start, stop);
            rounds[round] = ms[0] / r;
          }
          Arrays.sort(rounds);
          double t = rounds[rounds.length / 2];
          System.out.printf("%s %-12s %5d %5d %5d %-5s %-5s %9.4f ms %7.2f TFLOP/s %s%n",
              path.equals(paths.get(0)) ? "gemm" : "gemm-" + path, s[0], m, n, kk, ta, tb, t,
              2.0 * m * n * kk / (t * 1e-3) / 1e12, hopper ? k.gemmPath() : "wmma");
        }
        k.setHopperGemm(true);
        k.setTmaGemm(true);
        cuMemFree(a);
        cuMemFree(b);
        cuMemFree(c);
      }
      cuEventDestroy(start);
      cuEventDestroy(stop);
      cuStreamDestroy(stream);
    }
  }

  private static CUdeviceptr alloc(long floats) {
    CUdeviceptr p = new CUdeviceptr();
    cuMemAlloc(p, 4 * floats);
    cuMemsetD32(p, Float.floatToRawIntBits(0.5f), floats); // finite values, no NaN slow paths
    return p;
  }
}

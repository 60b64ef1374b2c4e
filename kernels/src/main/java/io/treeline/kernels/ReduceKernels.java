package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import java.util.List;
import java.util.Locale;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;

/**
 * The typed reducers of {@code reduce.cuh}: {@code dst = src[0] op ... op src[n-1]}, with AVG
 * as "sum" plus {@code finish} and the divisor. Types and ops are named as the kernels are
 * ("f32", "bf16", ..., "sum", "prod", "min", "max"). Launches take device addresses as
 * {@code long}s ({@link DevicePointers}) and write them into argument arrays prepared once, so a
 * launch allocates nothing; hence one instance per rank thread.
 */
public final class ReduceKernels {
  /** Inputs of one reduce launch (MAX_INPUTS in common.cuh). */
  public static final int MAX_INPUTS = 8;
  public static final List<String> TYPES = List.of("f32", "f64", "f16", "bf16", "i32", "i64",
      "u8");
  public static final List<String> OPS = List.of("sum", "prod", "min", "max");
  private static final int[] SIZES = {4, 8, 2, 2, 4, 8, 1};
  private static final int THREADS = 256;
  private static final int VPT = 2; // vectors per thread per step, as in reduce.cuh

  private final CUfunction[] reducers = new CUfunction[TYPES.size() * OPS.size()];
  /** Blocks of each reducer that fit the GPU at once (occupancy x SMs): one wave, no tail. */
  private final int[] residentBlocks = new int[TYPES.size() * OPS.size()];
  private int waves = 1;

  // reduce_T_OP(T* dst, Ptrs in, int n, long long count, int vec, int finish, int divisor)
  private final long[] rDst = new long[1];
  private final long[] rIn = new long[MAX_INPUTS];
  private final int[] rN = new int[1];
  private final long[] rCount = new long[1];
  private final int[] rVec = new int[1];
  private final int[] rFinish = new int[1];
  private final int[] rDivisor = new int[1];
  private final Pointer reduceArgs = Pointer.to(Pointer.to(rDst), Pointer.to(rIn),
      Pointer.to(rN), Pointer.to(rCount), Pointer.to(rVec), Pointer.to(rFinish),
      Pointer.to(rDivisor));

  public ReduceKernels(CudaModule module) {
    for (int t = 0; t < TYPES.size(); t++) {
      for (int o = 0; o < OPS.size(); o++) {
        int k = t * OPS.size() + o;
        reducers[k] = module.function("reduce_" + TYPES.get(t) + "_" + OPS.get(o));
        residentBlocks[k] = module.residentBlocks(reducers[k], THREADS, 0);
      }
    }
  }

  /**
   * Grid size of the reducers in waves of resident blocks (default 1: every block resident, each
   * striding over the data). For benchmarks that compare grid shapes.
   */
  public void gridWaves(int w) {
    waves = Math.max(1, w);
  }

  /** The handle {@link #reduce(int, long, long[], int, long, boolean, int, CUstream)} takes. */
  public static int kernel(String type, String op) {
    int t = TYPES.indexOf(type.toLowerCase(Locale.ROOT));
    String o = op.toLowerCase(Locale.ROOT);
    if (o.equals("avg")) {
      o = "sum";
    }
    int k = OPS.indexOf(o);
    if (t < 0 || k < 0) {
      throw new IllegalArgumentException("no device reducer for " + type + " x " + op
          + "; types " + TYPES + ", ops " + OPS + " and avg");
    }
    return t * OPS.size() + k;
  }

  /** Bytes per element of the reducer {@code kernel}. */
  public static int elementSize(int kernel) {
    return SIZES[kernel / OPS.size()];
  }

  /**
   * Enqueues {@code dst = src[0] op src[1] ... op src[n-1]} over {@code count} elements on
   * {@code stream}. Uses 16-byte vectors for everything but the last few elements when every
   * address is 16-byte aligned. Allocates nothing.
   */
  public void reduce(int kernel, long dst, long[] src, int n, long count, boolean finish,
      int divisor, CUstream stream) {
    if (n < 1 || n > MAX_INPUTS) {
      throw new IllegalArgumentException("1.." + MAX_INPUTS + " inputs, got " + n);
    }
    if (count <= 0) {
      return;
    }
    long align = dst;
    for (int k = 0; k < n; k++) {
      rIn[k] = src[k];
      align |= src[k];
    }
    for (int k = n; k < MAX_INPUTS; k++) {
      rIn[k] = 0;
    }
    int size = elementSize(kernel);
    boolean vec = (align & 15) == 0;
    long work = vec ? Math.max(1, count * size / 16 / VPT) : count;
    int blocks = (int) Math.max(1, Math.min((long) residentBlocks[kernel] * waves,
        (work + THREADS - 1) / THREADS));
    rDst[0] = dst;
    rN[0] = n;
    rCount[0] = count;
    rVec[0] = vec ? 1 : 0;
    rFinish[0] = finish ? 1 : 0;
    rDivisor[0] = divisor;
    cuLaunchKernel(reducers[kernel], blocks, 1, 1, THREADS, 1, 1, 0, stream, reduceArgs, null);
  }

  /** The same, with JCuda pointers (tests and one-off use; allocates). */
  public void reduce(String type, String op, CUdeviceptr[] src, int n, CUdeviceptr dst,
      long count, boolean finish, int divisor, CUstream stream) {
    long[] a = new long[n];
    for (int k = 0; k < n; k++) {
      a[k] = DevicePointers.address(src[k]);
    }
    reduce(kernel(type, op), DevicePointers.address(dst), a, n, count, finish, divisor, stream);
  }
}

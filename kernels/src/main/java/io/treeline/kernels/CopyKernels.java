package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;

/**
 * {@code copy_segments} of {@code treeline.cu}: up to {@link #MAX_SEGMENTS} device-to-device
 * copies in one launch (one grid row per segment), so that a bucket's pack or unpack costs one
 * launch instead of one {@code cuMemcpy} each. Allocation-free; one instance per rank thread.
 */
public final class CopyKernels {
  /** Segments of one launch (MAX_INPUTS in common.cuh). */
  public static final int MAX_SEGMENTS = ReduceKernels.MAX_INPUTS;
  private static final int THREADS = 256;

  private final CUfunction copySegments;
  private final int maxBlocks;
  // copy_segments(Segs s): src[8], dst[8], bytes[8] in one 192-byte parameter
  private final long[] segs = new long[3 * MAX_SEGMENTS];
  private final Pointer copyArgs = Pointer.to(Pointer.to(segs));

  public CopyKernels(CudaModule module) {
    copySegments = module.function("copy_segments");
    maxBlocks = module.smCount() * 4;
  }

  /**
   * Enqueues {@code n} copies (dst[k] = src[k], bytes[k] bytes each, 1..MAX_SEGMENTS) as one
   * launch. Allocates nothing.
   */
  public void copy(long[] src, long[] dst, long[] bytes, int n, CUstream stream) {
    if (n < 1 || n > MAX_SEGMENTS) {
      throw new IllegalArgumentException("1.." + MAX_SEGMENTS + " segments, got " + n);
    }
    long most = 0;
    for (int k = 0; k < MAX_SEGMENTS; k++) {
      boolean used = k < n;
      segs[k] = used ? src[k] : 0;
      segs[MAX_SEGMENTS + k] = used ? dst[k] : 0;
      segs[2 * MAX_SEGMENTS + k] = used ? bytes[k] : 0;
      if (used) {
        most = Math.max(most, bytes[k]);
      }
    }
    if (most == 0) {
      return;
    }
    long work = Math.max(1, most / 16 / 4);
    int blocks = (int) Math.max(1, Math.min(Math.max(1, maxBlocks / n),
        (work + THREADS - 1) / THREADS));
    cuLaunchKernel(copySegments, blocks, n, 1, THREADS, 1, 1, 0, stream, copyArgs, null);
  }
}

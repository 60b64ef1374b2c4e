package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;

/**
 * {@code barrier_flags} of {@code peer.cuh}: a barrier among a node's ranks run by one warp on
 * the stream, through flag words in each other's device memory. Allocation-free; one instance
 * per rank thread.
 */
public final class FlagKernels {
  /** Ranks of one barrier (MAX_INPUTS in common.cuh). */
  public static final int MAX_RANKS = ReduceKernels.MAX_INPUTS;

  private final CUfunction barrierFlags;
  // barrier_flags(Ptrs flags, int n, int me, u64 value, long long timeoutNs, u64* status)
  private final long[] bFlags = new long[MAX_RANKS];
  private final int[] bN = new int[1];
  private final int[] bMe = new int[1];
  private final long[] bValue = new long[1];
  private final long[] bTimeout = new long[1];
  private final long[] bStatus = new long[1];
  private final Pointer barrierArgs = Pointer.to(Pointer.to(bFlags), Pointer.to(bN),
      Pointer.to(bMe), Pointer.to(bValue), Pointer.to(bTimeout), Pointer.to(bStatus));

  public FlagKernels(CudaModule module) {
    barrierFlags = module.function("barrier_flags");
  }

  /**
   * Enqueues the flag barrier: rank {@code me} of {@code n} publishes {@code value} to every
   * peer's flag array and waits for theirs, at most {@code timeoutNs}; a wait that gives up
   * writes (peer + 1, value) to the two words at {@code status}.
   */
  public void barrier(long[] flags, int n, int me, long value, long timeoutNs, long status,
      CUstream stream) {
    if (n < 1 || n > MAX_RANKS || me < 0 || me >= n) {
      throw new IllegalArgumentException("flag barrier of 1.." + MAX_RANKS + " ranks, got rank "
          + me + " of " + n);
    }
    System.arraycopy(flags, 0, bFlags, 0, n);
    bN[0] = n;
    bMe[0] = me;
    bValue[0] = value;
    bTimeout[0] = timeoutNs;
    bStatus[0] = status;
    cuLaunchKernel(barrierFlags, 1, 1, 1, 32, 1, 1, 0, stream, barrierArgs, null);
  }
}

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
  /** Word of a rank's flag array where its status starts (4 words: peer + 1, value, kind, call). */
  public static final int STATUS_WORD = MAX_RANKS;
  /** Words from here: the peers' calls, {@code [parity * MAX_RANKS + peer]}. */
  public static final int CALL_WORDS = 2 * MAX_RANKS;
  /** Bytes of one rank's flag array: flags, status, and the calls of both parities. */
  public static final int FLAG_ARRAY_BYTES = 8 * 4 * MAX_RANKS;
  /** The status kind of a barrier that found a peer making another call. */
  public static final long MISMATCH = 1;
  // barrier_flags(Ptrs flags, int n, int me, u64 value, u64 call, long long timeoutNs,
  //     u64* status)
  private final long[] bFlags = new long[MAX_RANKS];
  private final int[] bN = new int[1];
  private final int[] bMe = new int[1];
  private final long[] bValue = new long[1];
  private final long[] bCall = new long[1];
  private final long[] bTimeout = new long[1];
  private final long[] bStatus = new long[1];
  private final Pointer barrierArgs = Pointer.to(Pointer.to(bFlags), Pointer.to(bN),
      Pointer.to(bMe), Pointer.to(bValue), Pointer.to(bCall), Pointer.to(bTimeout), Pointer.to(bStatus));

  public FlagKernels(CudaModule module) {
    barrierFlags = module.function("barrier_flags");
  }

  /**
   * Enqueues the flag barrier: rank {@code me} of {@code n} publishes {@code value} to every
   * peer's flag array and waits for theirs, at most {@code timeoutNs}; a wait that gives up
   * writes (peer + 1, value) to the words at {@code status}. {@code call} ({@link #callWord})
   * is published beside the flag and compared with each peer's: a peer in the same call with
   * another descriptor writes (peer + 1, value, {@link #MISMATCH}, its call word) there.
   */
  public void barrier(long[] flags, int n, int me, long value, long call, long timeoutNs,
      long status, CUstream stream) {
    if (n < 1 || n > MAX_RANKS || me < 0 || me >= n) {
      throw new IllegalArgumentException("flag barrier of 1.." + MAX_RANKS + " ranks, got rank "
          + me + " of " + n);
    }
    System.arraycopy(flags, 0, bFlags, 0, n);
    bN[0] = n;
    bMe[0] = me;
    bValue[0] = value;
    bCall[0] = call;
    bTimeout[0] = timeoutNs;
    bStatus[0] = status;
    cuLaunchKernel(barrierFlags, 1, 1, 1, 32, 1, 1, 0, stream, barrierArgs, null);
  }

  /** The call word of collective {@code sequence} whose descriptor hashes to {@code hash}. */
  public static long callWord(long sequence, int hash) {
    return (sequence << 32) | (hash & 0xFFFF_FFFFL);
  }
}

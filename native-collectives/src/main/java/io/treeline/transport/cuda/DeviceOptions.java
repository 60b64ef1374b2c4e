package io.treeline.transport.cuda;

import io.treeline.plan.AlgorithmSelector;

/**
 * The GPU path's settings, beside the communicator's {@code CommConfig}.
 *
 * @param ordinal the CUDA device this rank uses, as this process sees it (under YARN or
 *     CUDA_VISIBLE_DEVICES isolation usually 0; ranks are told apart by GPU UUID, never by it)
 * @param bufferBytes bytes of each registered buffer (INPUT and OUTPUT) per rank, mapped by the
 *     node's peers; larger allreduces run in windows of this size
 * @param sync how the ranks of a node order their kernels ({@link Sync})
 * @param selector the cost model that picks one-shot or two-shot when no algorithm is forced;
 *     null: {@link #defaultSelector} for how the ranks share GPUs
 * @param stagingChunkBytes across nodes, the unit in which a slice crosses through pinned host
 *     memory: the copies of one chunk overlap the network transfer of the one before
 */
public record DeviceOptions(int ordinal, long bufferBytes, Sync sync, AlgorithmSelector selector,
    long stagingChunkBytes) {
  /**
   * {@code FLAGS}: a barrier kernel on flags in peer memory (release/acquire at system scope),
   * the GPU never waits for a CPU; for ranks on distinct GPUs. {@code EVENTS}: CUDA IPC events
   * recorded after each phase and waited on with cuStreamWaitEvent, the CPUs handshaking through
   * shared memory that an event was recorded; for ranks that share a GPU, whose separate
   * contexts are time-sliced, so a kernel spinning on a flag may hold the GPU from the kernel
   * that would set it. {@code AUTO}: FLAGS when every local rank has a GPU of its own.
   */
  public enum Sync {
    AUTO, FLAGS, EVENTS
  }

  /** Across nodes (not used by the one-node GPU path yet): 100 GbE. */
  private static final AlgorithmSelector.LinkCost INTER = new AlgorithmSelector.LinkCost(40, 12.5);

  /** {@code selector} null: {@link #defaultSelector} for the ranks' setup. */
  public static final DeviceOptions DEFAULT = new DeviceOptions(0, 256L << 20, Sync.AUTO, null,
      4L << 20);

  /**
   * The cost model's constants for how the node's ranks share GPUs, fitted to
   * {@code DeviceBench} on the H200 (docs/BENCHMARKS.md, 2026-12-02) where it could be measured:
   *
   * <ul>
   *   <li>processes sharing one GPU: their contexts are time-sliced, so a synchronisation round
   *       costs about 140 us per rank (the time slices of the others) and the GPU's HBM
   *       (about 3600 GB/s read + write) is shared by the k ranks; one-shot wins up to 64-128 MiB
   *       with 4-8 ranks, because it has one round fewer;
   *   <li>threads of one process sharing one GPU: one context, kernels of the ranks' streams
   *       overlap, a round is an event handshake between threads (18-110 us for 2-8 threads);
   *       one-shot wins up to 8-16 MiB with 4-8 ranks;
   *   <li>one GPU per rank: a round is a barrier kernel (about 8 us with its launch, as vLLM's
   *       custom allreduce measures), peer reads over NVLink at about 400 GB/s per GPU; not
   *       measured here (one GPU lent), so issue 8's multi-GPU run calibrates it.
   * </ul>
   */
  public static AlgorithmSelector defaultSelector(boolean sharedGpu, boolean oneProcess,
      int localRanks) {
    int k = Math.max(1, localRanks);
    if (!sharedGpu) {
      return new AlgorithmSelector(new AlgorithmSelector.LinkCost(8, 400), INTER);
    }
    if (oneProcess) {
      // rounds measured at 18, 33 and 110 us for 2, 4 and 8 threads (their CPUs hand events
      // over), and the HBM read by all k ranks at once
      return new AlgorithmSelector(new AlgorithmSelector.LinkCost(5 + 1.6 * k * k, 3800.0 / k),
          INTER);
    }
    return new AlgorithmSelector(new AlgorithmSelector.LinkCost(140.0 * k, 3600.0 / k), INTER);
  }

  public DeviceOptions {
    if (bufferBytes < 256 || bufferBytes % 256 != 0) {
      throw new IllegalArgumentException("bufferBytes must be a positive multiple of 256, got "
          + bufferBytes);
    }
    if (stagingChunkBytes < 4096) {
      throw new IllegalArgumentException("stagingChunkBytes must be at least 4096, got "
          + stagingChunkBytes);
    }
  }

  /**
   * One-shot or two-shot for {@code bytes} on one node, whichever {@code selector} models as
   * faster (the device path runs no message plans, so the selector's other candidates are out).
   */
  public static io.treeline.plan.Algorithm choose(AlgorithmSelector selector,
      io.treeline.plan.Topology topo, long bytes) {
    double one = selector.estimateMicros(io.treeline.plan.Algorithm.ONESHOT, topo, bytes);
    double two = selector.estimateMicros(io.treeline.plan.Algorithm.TWOSHOT, topo, bytes);
    return one <= two ? io.treeline.plan.Algorithm.ONESHOT : io.treeline.plan.Algorithm.TWOSHOT;
  }

  public DeviceOptions withOrdinal(int o) {
    return new DeviceOptions(o, bufferBytes, sync, selector, stagingChunkBytes);
  }

  public DeviceOptions withBufferBytes(long b) {
    return new DeviceOptions(ordinal, b, sync, selector, stagingChunkBytes);
  }

  public DeviceOptions withStagingChunkBytes(long b) {
    return new DeviceOptions(ordinal, bufferBytes, sync, selector, b);
  }

  public DeviceOptions withSync(Sync s) {
    return new DeviceOptions(ordinal, bufferBytes, s, selector, stagingChunkBytes);
  }
}

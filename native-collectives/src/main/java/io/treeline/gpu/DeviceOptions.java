package io.treeline.gpu;

import io.treeline.conf.TreelineConf;
import java.util.Locale;

/**
 * The GPU path's settings, beside the communicator's {@code CommConfig}.
 *
 * @param ordinal the CUDA device this rank uses, as this process sees it (under YARN or
 *     CUDA_VISIBLE_DEVICES isolation usually 0; ranks are told apart by GPU UUID, never by it)
 * @param bufferBytes bytes of each registered buffer (INPUT and OUTPUT) per rank, mapped by the
 *     node's peers; larger allreduces run in windows of this size
 * @param sync how the ranks of a node order their kernels ({@link Sync})
 * @param costModel picks one-shot or two-shot when no algorithm is forced; null:
 *     {@link #defaultCostModel} for how the ranks share GPUs
 * @param stagingChunkBytes across nodes, the unit in which a slice crosses through pinned host
 *     memory: the copies of one chunk overlap the network transfer of the one before
 */
public record DeviceOptions(int ordinal, long bufferBytes, Sync sync, DeviceCostModel costModel,
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

  /** {@code costModel} null: {@link #defaultCostModel} for the ranks' setup. */
  public static final DeviceOptions DEFAULT = new DeviceOptions(0, 256L << 20, Sync.AUTO, null,
      io.treeline.plan.StagedHierarchical.DEFAULT_STAGE_CHUNK_BYTES);

  /**
   * The cost model's constants for how the node's ranks share GPUs, fitted to
   * {@code DeviceBench} on the H200 (docs/BENCHMARKS.md, 2026-12-02) where it could be measured:
   *
   * <ul>
   *   <li>processes sharing one GPU: their contexts are time-sliced, so a round costs about
   *       140 us per rank (77-136 measured: the time slices of the others); HBM at 4000 GB/s
   *       read + write. Two-shot from about 256 MiB (4 ranks) and 64-128 MiB (8 ranks);
   *   <li>threads of one process sharing one GPU: one context, the ranks' kernels overlap; a
   *       round is an event handshake between threads, 18, 33 and 110 us for 2, 4 and 8.
   *       Two-shot from 32-64 MiB (2 ranks) and 8-16 MiB (4 and 8 ranks);
   *   <li>one GPU per rank: a round is a barrier kernel (about 8 us with its launch, as vLLM's
   *       custom allreduce measures), peer reads at about 400 GB/s into each GPU (NVLink 4);
   *       not measured here (one GPU lent): issue 8's multi-GPU run calibrates it.
   * </ul>
   */
  public static DeviceCostModel defaultCostModel(boolean sharedGpu, boolean oneProcess,
      int localRanks) {
    int k = Math.max(1, localRanks);
    if (!sharedGpu) {
      return new DeviceCostModel(8, 400, false);
    }
    if (oneProcess) {
      return new DeviceCostModel(5 + 1.6 * k * k, 4000, true);
    }
    return new DeviceCostModel(140.0 * k, 4000, true);
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

  /** The GPU path's settings {@code conf}'s keys describe, for CUDA device {@code ordinal}. */
  public static DeviceOptions from(TreelineConf conf, int ordinal) {
    return DEFAULT.withOrdinal(ordinal).withBufferBytes(conf.get(TreelineConf.GPU_BUFFER_BYTES))
        .withSync(Sync.valueOf(conf.get(TreelineConf.GPU_SYNC).toUpperCase(Locale.ROOT)))
        .withStagingChunkBytes(conf.get(TreelineConf.GPU_STAGING_CHUNK_BYTES));
  }

  public DeviceOptions withCostModel(DeviceCostModel m) {
    return new DeviceOptions(ordinal, bufferBytes, sync, m, stagingChunkBytes);
  }

  public DeviceOptions withOrdinal(int o) {
    return new DeviceOptions(o, bufferBytes, sync, costModel, stagingChunkBytes);
  }

  public DeviceOptions withBufferBytes(long b) {
    return new DeviceOptions(ordinal, b, sync, costModel, stagingChunkBytes);
  }

  public DeviceOptions withStagingChunkBytes(long b) {
    return new DeviceOptions(ordinal, bufferBytes, sync, costModel, b);
  }

  public DeviceOptions withSync(Sync s) {
    return new DeviceOptions(ordinal, bufferBytes, s, costModel, stagingChunkBytes);
  }
}

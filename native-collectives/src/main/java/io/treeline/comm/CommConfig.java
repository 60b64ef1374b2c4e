package io.treeline.comm;

import io.treeline.conf.TreelineConf;
import io.treeline.plan.Algorithm;
import io.treeline.plan.AlgorithmSelector;
import io.treeline.plan.PlanConfig;
import java.time.Duration;

/**
 * A communicator's settings. Spark users set them as {@code spark.treeline.*} keys (declared in
 * the plugin's configuration); plain processes through this record.
 *
 * @param timeout how long any one collective (and the setup) may take before every wait in it
 *     fails with a {@code CollectiveException} naming rank, peer and phase; default 60 s
 * @param plan chunking and alignment of plans ({@link PlanConfig#DEFAULT})
 * @param segmentBytes bytes of each shared-memory buffer (INPUT and OUTPUT) per rank; larger
 *     allreduces run in windows of this size; default 32 MiB
 * @param slotsPerLane receive slots per TCP lane, the credit window; default 2
 * @param algorithm forces one allreduce algorithm; null lets the selector choose
 * @param selector the size and topology rule used when {@code algorithm} is null
 */
public record CommConfig(Duration timeout, PlanConfig plan, long segmentBytes, int slotsPerLane,
    Algorithm algorithm, AlgorithmSelector selector) {

  public static final CommConfig DEFAULT = new CommConfig(Duration.ofSeconds(60),
      PlanConfig.DEFAULT, 32L << 20, 2, null, AlgorithmSelector.DEFAULT);

  public CommConfig {
    if (segmentBytes < plan.alignBytes() || segmentBytes % 64 != 0) {
      throw new IllegalArgumentException("segmentBytes must be a multiple of 64 bytes, got "
          + segmentBytes);
    }
    if (slotsPerLane < 1) {
      throw new IllegalArgumentException("slotsPerLane must be at least 1");
    }
  }

  /** The communicator settings {@code conf}'s {@code spark.treeline.*} keys describe. */
  public static CommConfig from(TreelineConf conf) {
    String a = conf.get(TreelineConf.ALGORITHM);
    return new CommConfig(conf.get(TreelineConf.TIMEOUT), PlanConfig.DEFAULT.withChunkBytes(
        conf.get(TreelineConf.CHUNK_BYTES)).withNetGrainBytes(
        Math.toIntExact(conf.get(TreelineConf.NET_GRAIN_BYTES))), conf.get(TreelineConf.SEGMENT_BYTES),
        conf.get(TreelineConf.SLOTS_PER_LANE), a.equals("auto") ? null : Algorithm.parse(a),
        AlgorithmSelector.DEFAULT);
  }

  public CommConfig withTimeout(Duration t) {
    return new CommConfig(t, plan, segmentBytes, slotsPerLane, algorithm, selector);
  }

  public CommConfig withAlgorithm(Algorithm a) {
    return new CommConfig(timeout, plan, segmentBytes, slotsPerLane, a, selector);
  }

  public CommConfig withSegmentBytes(long b) {
    return new CommConfig(timeout, plan, b, slotsPerLane, algorithm, selector);
  }

  public CommConfig withSlotsPerLane(int slots) {
    return new CommConfig(timeout, plan, segmentBytes, slots, algorithm, selector);
  }

  public CommConfig withPlan(PlanConfig p) {
    return new CommConfig(timeout, p, segmentBytes, slotsPerLane, algorithm, selector);
  }
}

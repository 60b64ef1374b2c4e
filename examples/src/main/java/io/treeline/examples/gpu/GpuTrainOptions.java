package io.treeline.examples.gpu;

import io.treeline.examples.mnist.Trainer;

/**
 * What {@link GpuTrainer} needs besides the CPU job's hyper-parameters: the data set's folder
 * (a name, so that the record travels in a Spark closure), whether the last layer's gradient
 * allreduce overlaps the earlier layers' backward (like DDP), which GPU (-1: rank modulo the number of GPUs, so that K ranks share fewer GPUs),
 * and which GEMM kernels: {@code auto} (the fastest this device and JVM can run: TMA, else the
 * cp.async wgmma kernels on compute capability 9.0, else wmma), {@code wgmma} (no TMA) or
 * {@code wmma} (no Hopper kernels), for comparing them in one place.
 */
public record GpuTrainOptions(Trainer.Options train, String data, boolean overlap, int ordinal,
    String gemm) implements java.io.Serializable {
  /** The values of {@link #gemm}. */
  public static final java.util.List<String> GEMMS = java.util.List.of("auto", "wgmma", "wmma");

  public GpuTrainOptions {
    if (!GEMMS.contains(gemm)) {
      throw new IllegalArgumentException("--gemm " + String.join("|", GEMMS) + ", not " + gemm);
    }
  }

  public GpuTrainOptions(Trainer.Options train, String data, boolean overlap, int ordinal) {
    this(train, data, overlap, ordinal, "auto");
  }

  public static GpuTrainOptions defaults(String data) {
    return new GpuTrainOptions(Trainer.Options.defaults(), data, true, -1);
  }

  public GpuTrainOptions withOverlap(boolean o) {
    return new GpuTrainOptions(train, data, o, ordinal, gemm);
  }

  public GpuTrainOptions withTrain(Trainer.Options t) {
    return new GpuTrainOptions(t, data, overlap, ordinal, gemm);
  }

  public GpuTrainOptions withGemm(String g) {
    return new GpuTrainOptions(train, data, overlap, ordinal, g);
  }
}

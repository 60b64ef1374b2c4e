package io.treeline.examples.gpu;

import io.treeline.examples.mnist.Trainer;

/**
 * What {@link GpuTrainer} needs besides the CPU job's hyper-parameters: the data set's folder
 * (a name, so that the record travels in a Spark closure), whether the last layer's gradient
 * allreduce overlaps the earlier layers' backward (like DDP), and which GPU (-1: rank modulo the number of GPUs, so that K ranks share fewer GPUs).
 */
public record GpuTrainOptions(Trainer.Options train, String data, boolean overlap, int ordinal)
    implements java.io.Serializable {
  public static GpuTrainOptions defaults(String data) {
    return new GpuTrainOptions(Trainer.Options.defaults(), data, true, -1);
  }

  public GpuTrainOptions withOverlap(boolean o) {
    return new GpuTrainOptions(train, data, o, ordinal);
  }

  public GpuTrainOptions withTrain(Trainer.Options t) {
    return new GpuTrainOptions(t, data, overlap, ordinal);
  }
}

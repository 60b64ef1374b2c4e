package io.treeline.gpu;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.kernels.CopyKernels;
import java.util.ArrayList;
import java.util.List;

/**
 * Averages a model's gradients that live on the GPU, the device counterpart of barrier-exec's
 * {@code GradientAggregator}: tensors (device address + element count, one data type) are
 * registered once, packed into buckets of at most the registered buffer's size, and each
 * {@link #allReduce()} copies every bucket's tensors into the registered INPUT with one launch
 * (up to 8 tensors per launch), averages it in place over all ranks, and copies the averages
 * back, everything enqueued on the communicator's stream; {@link DeviceCommunicator#synchronize}
 * (or later work on the legacy default stream) sees the result. Per step it allocates nothing:
 * the copy lists are built at the first call.
 *
 * <pre>{@code
 * DeviceGradientAggregator agg = new DeviceGradientAggregator(comm, DataType.F32);
 * agg.register(gradW1Ptr, w1Count);  agg.register(gradB1Ptr, b1Count);   // once
 * for (each step) { backward(); agg.allReduce(); ... }                      // averaged in place
 * }</pre>
 */
public final class DeviceGradientAggregator {
  private final DeviceCommunicator comm;
  private final DataType type;
  private final List<long[]> tensors = new ArrayList<>();
  private Bucket[] buckets;

  /** One bucket: its element count and its copies in and out, MAX_INPUTS per launch. */
  private record Bucket(long count, long[][] src, long[][] dst, long[][] bytes, int[] n,
      long[][] backSrc, long[][] backDst) {
  }

  public DeviceGradientAggregator(DeviceCommunicator comm, DataType type) {
    this.comm = comm;
    this.type = type;
  }

  /** A gradient tensor of {@code count} elements at device address {@code address}. */
  public int register(long address, long count) {
    if (buckets != null) {
      throw new IllegalStateException("register every gradient before the first allReduce()");
    }
    if (count * type.size() > comm.capacityBytes()) {
      throw new IllegalArgumentException("a tensor of " + count * type.size() + " bytes is "
          + "larger than the registered buffer (" + comm.capacityBytes() + " bytes, "
          + "spark.treeline.gpu.bufferBytes)");
    }
    tensors.add(new long[] {address, count});
    return tensors.size() - 1;
  }

  /** The number of buckets (one allreduce each), once the first allReduce() packed them. */
  public int buckets() {
    return buckets == null ? 0 : buckets.length;
  }

  /** Average every registered gradient over all ranks, in place; enqueued, not waited for. */
  public void allReduce() {
    if (buckets == null) {
      buckets = pack();
    }
    CopyKernels k = comm.copies();
    for (Bucket b : buckets) {
      for (int l = 0; l < b.n.length; l++) {
        k.copy(b.src[l], b.dst[l], b.bytes[l], b.n[l], comm.stream());
      }
      comm.allReduce(b.count, type, ReduceOp.AVG, null);
      for (int l = 0; l < b.n.length; l++) {
        k.copy(b.backSrc[l], b.backDst[l], b.bytes[l], b.n[l], comm.stream());
      }
    }
  }

  private Bucket[] pack() {
    int es = type.size();
    long capacity = comm.capacityBytes() / es;
    List<Bucket> out = new ArrayList<>();
    int i = 0;
    while (i < tensors.size()) {
      List<long[]> in = new ArrayList<>();
      long count = 0;
      while (i < tensors.size() && count + tensors.get(i)[1] <= capacity) {
        in.add(tensors.get(i));
        count += tensors.get(i)[1];
        i++;
      }
      int launches = (in.size() + CopyKernels.MAX_SEGMENTS - 1) / CopyKernels.MAX_SEGMENTS;
      long[][] src = new long[launches][CopyKernels.MAX_SEGMENTS];
      long[][] dst = new long[launches][CopyKernels.MAX_SEGMENTS];
      long[][] bytes = new long[launches][CopyKernels.MAX_SEGMENTS];
      long[][] backSrc = new long[launches][CopyKernels.MAX_SEGMENTS];
      long[][] backDst = new long[launches][CopyKernels.MAX_SEGMENTS];
      int[] n = new int[launches];
      long offset = 0;
      for (int t = 0; t < in.size(); t++) {
        int l = t / CopyKernels.MAX_SEGMENTS;
        int s = t % CopyKernels.MAX_SEGMENTS;
        long[] tensor = in.get(t);
        src[l][s] = tensor[0];
        dst[l][s] = comm.input() + offset * es;
        backSrc[l][s] = comm.output() + offset * es;
        backDst[l][s] = tensor[0];
        bytes[l][s] = tensor[1] * es;
        n[l] = s + 1;
        offset += tensor[1];
      }
      out.add(new Bucket(count, src, dst, bytes, n, backSrc, backDst));
    }
    return out.toArray(new Bucket[0]);
  }
}

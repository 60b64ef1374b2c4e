package io.treeline.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Averages a model's gradients that live on the GPU, the device counterpart of barrier-exec's
 * {@code GradientAggregator}: tensors (device address + element count, one data type) are
 * registered once, packed into buckets of at most the registered buffer's size, and each
 * {@link #allReduce()} copies every bucket's tensors into the registered input
 * ({@link DeviceCommunicator#copy}: a few tensors per launch), averages it in place over all
 * ranks, and copies the averages back, everything enqueued on the communicator's stream;
 * {@link DeviceCommunicator#synchronize} (or later work on that stream) sees the result. Per
 * step it allocates nothing: the copy lists are built at the first call. It uses nothing but the
 * {@link DeviceCommunicator} interface.
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

  /** One bucket: its element count and its copies in and out, one segment per tensor. */
  private record Bucket(long count, long[] src, long[] dst, long[] bytes, long[] backSrc,
      long[] backDst) {
  }

  /**
   * An aggregator of gradients of one element type on {@code comm}'s GPU.
   *
   * @param comm the device communicator the buckets are averaged on
   * @param type the element type of every registered tensor
   */
  public DeviceGradientAggregator(DeviceCommunicator comm, DataType type) {
    if (comm == null || type == null) {
      throw new IllegalArgumentException("a DeviceGradientAggregator needs a communicator and "
          + "a data type");
    }
    this.comm = comm;
    this.type = type;
  }

  /**
   * Registers a gradient tensor of {@code count} elements at device address {@code address};
   * every rank registers the same counts in the same order, before the first
   * {@link #allReduce()}.
   *
   * @param address the tensor's device address on the communicator's GPU
   * @param count its elements; at most the registered buffer's capacity
   * @return the tensor's index, in registration order
   * @throws IllegalStateException after the first {@link #allReduce()}
   * @throws IllegalArgumentException when the tensor is larger than the registered buffer
   */
  public int register(long address, long count) {
    if (buckets != null) {
      throw new IllegalStateException("register every gradient before the first allReduce()");
    }
    if (count < 0 || count * type.size() > comm.capacityBytes()) {
      throw new IllegalArgumentException("a tensor of " + count * type.size() + " bytes is "
          + "larger than the registered buffer (" + comm.capacityBytes() + " bytes, "
          + "spark.treeline.gpu.bufferBytes)");
    }
    tensors.add(new long[] {address, count});
    return tensors.size() - 1;
  }

  /**
   * The number of buckets (one allreduce each), once the first {@link #allReduce()} packed them.
   *
   * @return buckets, or 0 before the first allReduce
   */
  public int buckets() {
    return buckets == null ? 0 : buckets.length;
  }

  /**
   * Averages every registered gradient over all ranks, in place; enqueued on the communicator's
   * stream, not waited for.
   *
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  public void allReduce() {
    if (buckets == null) {
      buckets = pack();
    }
    for (Bucket b : buckets) {
      comm.copy(b.src, b.dst, b.bytes, b.src.length);
      comm.allReduce(b.count, type, ReduceOp.AVG);
      comm.copy(b.backSrc, b.backDst, b.bytes, b.src.length);
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
      int n = in.size();
      long[] src = new long[n];
      long[] dst = new long[n];
      long[] bytes = new long[n];
      long[] backSrc = new long[n];
      long[] backDst = new long[n];
      long offset = 0;
      for (int t = 0; t < n; t++) {
        long[] tensor = in.get(t);
        src[t] = tensor[0];
        dst[t] = comm.input() + offset * es;
        backSrc[t] = comm.output() + offset * es;
        backDst[t] = tensor[0];
        bytes[t] = tensor[1] * es;
        offset += tensor[1];
      }
      out.add(new Bucket(count, src, dst, bytes, backSrc, backDst));
    }
    return out.toArray(new Bucket[0]);
  }
}

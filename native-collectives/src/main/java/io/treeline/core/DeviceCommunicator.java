package io.treeline.core;

import java.time.Duration;

/**
 * Allreduce of GPU memory among the ranks of a job, one GPU per rank. Inside a node the ranks
 * read each other's registered device buffers in place (CUDA IPC); across nodes slices cross
 * through pinned host memory and TCP. Inside Spark,
 * {@code io.treeline.barrier.Treeline.deviceCommunicator()} gives the task's device
 * communicator on the GPU Spark assigned to the task. Device memory is named by its address, a
 * {@code long} (a {@code CUdeviceptr} / {@code void*} of the CUDA driver, in the device's primary
 * context), so that any CUDA binding can pass it.
 *
 * <h2>Who is who</h2>
 * As for {@link Communicator}: {@link #rank()} numbers the ranks as the job does,
 * {@link #topologyRank()} is the node-major order. {@link #localRank()} differs: it orders the
 * ranks of a node so that consecutive ones sit on different PCIe switches, and it decides which
 * slice of a message a rank reduces and which ranks of other nodes it exchanges with.
 *
 * <h2>Registered buffers</h2>
 * Each rank owns two device buffers of {@link #capacityBytes()} bytes, {@link #input()} and
 * {@link #output()}, which its node's peers map. {@link #allReduce(long, DataType, ReduceOp)}
 * reduces the first elements of every rank's input into every rank's output with no copy;
 * {@link #allReduce(long, long, long, DataType, ReduceOp)} takes any device buffers on this
 * rank's GPU and copies through the registered ones, in windows when the message is larger.
 *
 * <h2>Stream order</h2>
 * Every call enqueues its work on the communicator's {@link #stream()} and returns without
 * waiting for the GPU (as NCCL's calls do): work enqueued on that stream later sees the result,
 * and so does the host after {@link #synchronize()} or the {@link Handle} of an {@code *Async}
 * call. The stream is a blocking stream, so work on the legacy default stream before a call is
 * ordered before it. Every rank must make the same sequence of calls (count, type, operation);
 * the calls of one communicator come from one thread at a time.
 *
 * <h2>Argument errors and failures</h2>
 * A count that does not fit, a null type or operation throws {@link IllegalArgumentException} on
 * the calling thread before anything is enqueued; the communicator stays usable. A peer that
 * fails, makes a different call or does not arrive within {@link #timeout()} makes the call (or
 * the {@link #synchronize()} that waits for it) throw a {@link CollectiveException} naming this
 * rank, the peer and the phase; the peers are told at once, and every later call throws naming
 * the first cause. {@link #close()} unmaps the peers' memory and frees this rank's, after a
 * failure too.
 */
public interface DeviceCommunicator extends AutoCloseable {
  /**
   * This rank, {@code 0..size()-1}, as the job numbers ranks (Spark: the partition id).
   *
   * @return this rank
   */
  int rank();

  /**
   * The number of ranks.
   *
   * @return the ranks of this communicator
   */
  int size();

  /**
   * This rank's place in node-major order over all ranks (nodes in order of their lowest rank).
   *
   * @return {@code 0..size()-1}
   */
  int topologyRank();

  /**
   * This rank's index among its node's ranks, in the order that spreads their GPUs across PCIe
   * switches: the slice its reduce-scatter phase owns, and its group across nodes.
   *
   * @return {@code 0..localSize()-1}
   */
  int localRank();

  /**
   * The number of ranks on this rank's node.
   *
   * @return ranks sharing this node
   */
  int localSize();

  /**
   * The number of nodes (hosts) the ranks span.
   *
   * @return the nodes of this communicator
   */
  int nodeCount();

  /**
   * The UUID of this rank's GPU, as {@code nvidia-smi -L} prints it ({@code GPU-...}).
   *
   * @return the GPU's identity, the same in every process that sees it
   */
  String gpu();

  /**
   * The CUDA device ordinal of this rank's GPU in this process (what
   * {@code cuDeviceGet}/{@code cudaSetDevice} take); the work runs in that device's primary
   * context.
   *
   * @return the device ordinal in this process, from 0
   */
  int deviceOrdinal();

  /**
   * The CUDA stream every call enqueues on, as the driver's handle ({@code CUstream}, the same
   * as a runtime {@code cudaStream_t}): order your own work against the collectives with events
   * on it. Valid until {@link #close()}.
   *
   * @return the stream's native handle
   */
  long stream();

  /**
   * How long any one wait may take before the call (or its {@link #synchronize()}) fails;
   * {@code spark.treeline.timeout} in Spark.
   *
   * @return the timeout of every wait
   */
  Duration timeout();

  /**
   * Bytes of each registered buffer ({@code spark.treeline.gpu.bufferBytes} in Spark).
   *
   * @return the capacity of {@link #input()} and of {@link #output()}
   */
  long capacityBytes();

  /**
   * Device address of this rank's registered input buffer, {@link #capacityBytes()} bytes.
   *
   * @return the input's device address
   */
  long input();

  /**
   * Device address of this rank's registered output buffer, where
   * {@link #allReduce(long, DataType, ReduceOp)} leaves its result.
   *
   * @return the output's device address
   */
  long output();

  /**
   * Enqueues {@code output = op over all ranks of input}, on the first {@code count} elements of
   * the registered buffers. Every rank must make the same call.
   *
   * @param count elements; {@code count * type.size()} at most {@link #capacityBytes()}
   * @param type the element type
   * @param op the reduction ({@link ReduceOp#AVG} divides by {@link #size()} once)
   * @throws IllegalArgumentException when the message does not fit or an argument is null
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  void allReduce(long count, DataType type, ReduceOp op);

  /**
   * {@link #allReduce(long, DataType, ReduceOp)} with a handle to wait for it on the host.
   *
   * @param count elements; {@code count * type.size()} at most {@link #capacityBytes()}
   * @param type the element type
   * @param op the reduction
   * @return the call's handle: done once the GPU has run it
   * @throws IllegalArgumentException when the message does not fit or an argument is null
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  Handle allReduceAsync(long count, DataType type, ReduceOp op);

  /**
   * Enqueues {@code dst = op over all ranks of src} for device buffers anywhere on this rank's
   * GPU ({@code src == dst} allowed): copied into the registered input and out of the registered
   * output, in windows of {@link #capacityBytes()}. Every rank must make the same call.
   *
   * @param src device address of {@code count} input elements
   * @param dst device address of {@code count} output elements
   * @param count elements, any number
   * @param type the element type
   * @param op the reduction
   * @throws IllegalArgumentException when an argument is null or the count negative
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  void allReduce(long src, long dst, long count, DataType type, ReduceOp op);

  /**
   * {@link #allReduce(long, long, long, DataType, ReduceOp)} with a handle to wait for it on the
   * host.
   *
   * @param src device address of {@code count} input elements
   * @param dst device address of {@code count} output elements
   * @param count elements, any number
   * @param type the element type
   * @param op the reduction
   * @return the call's handle: done once the GPU has run it
   * @throws IllegalArgumentException when an argument is null or the count negative
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  Handle allReduceAsync(long src, long dst, long count, DataType type, ReduceOp op);

  /**
   * Enqueues {@code n} device-to-device copies on {@link #stream()}, ordered with the
   * collectives (a bucket packed into {@link #input()} and unpacked from {@link #output()}, as
   * {@link DeviceGradientAggregator} does): segment {@code i} copies {@code bytes[i]} bytes from
   * {@code src[i]} to {@code dst[i]}. A few segments go in one kernel launch; nothing is
   * allocated.
   *
   * @param src device addresses to copy from
   * @param dst device addresses to copy to, not overlapping their source
   * @param bytes bytes of each segment
   * @param n segments, the first {@code n} entries of the arrays
   * @throws IllegalArgumentException when an array is shorter than {@code n}
   * @throws CollectiveException when the communicator failed earlier or is closed
   */
  void copy(long[] src, long[] dst, long[] bytes, int n);

  /**
   * Waits until everything enqueued on {@link #stream()} has run, at most {@link #timeout()};
   * then reports a peer that did not arrive in a barrier of an enqueued collective.
   *
   * @throws CollectiveException naming rank, peer and phase when the GPU failed, a barrier gave
   *     up or the wait timed out
   */
  void synchronize();

  /**
   * Closes every mapping of the peers' memory and event, frees this rank's buffers and stream
   * and tells the peers that this rank left; safe after a failure and twice.
   */
  @Override
  void close();
}

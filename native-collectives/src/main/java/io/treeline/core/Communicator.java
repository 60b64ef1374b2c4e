package io.treeline.core;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.time.Duration;

/**
 * Collectives among the ranks of a job: allreduce, broadcast, reduce-scatter, all-gather and a
 * barrier, on arrays, NIO buffers of the four common types, or direct byte buffers of any
 * {@link DataType}. Inside Spark, {@code io.treeline.barrier.Treeline.communicator()} gives the
 * task's communicator; a plain process makes one with {@code io.treeline.comm.HostCommunicator}.
 *
 * <h2>Who is who</h2>
 * {@link #rank()} numbers the ranks {@code 0..size()-1} as the job does (in Spark, the barrier
 * task's partition id; under a torchrun-style launcher, {@code TREELINE_RANK}); it is the
 * numbering of {@code broadcast}'s root and of {@link #slice(long, DataType, int)}. The
 * communicator groups ranks by node: nodes numbered in order of their lowest rank
 * ({@link #nodeRank()}, {@link #nodeCount()}), ranks inside a node in rank order
 * ({@link #localRank()}, {@link #localSize()}). {@link #topologyRank()} is a rank's place in that
 * node-major order; it decides which slice a reduce-scatter leaves with a rank and is equal to
 * {@code rank()} whenever the job numbers its ranks node-major.
 *
 * <h2>Calls</h2>
 * Every rank must make the same sequence of collective calls (kind, count, type, operation,
 * root); a rank that differs makes every rank fail with a {@link CallMismatchException} naming
 * both calls. Input and output may be the same array or buffer. Arrays and typed buffers are
 * read and written by index; {@code ByteBuffer}s must be direct and in native byte order. A
 * message of any size works: larger than the communicator's shared buffers, it runs in windows.
 *
 * <h2>Argument errors</h2>
 * A wrong argument (a null or too short array or buffer, an offset or count out of range, a
 * read-only output, a heap or foreign-order {@code ByteBuffer}, a count whose byte size
 * overflows, a root that is no rank) throws {@link IllegalArgumentException} on the calling
 * thread before anything is sent: the other ranks keep waiting for this rank's next call and the
 * communicator stays usable.
 *
 * <h2>Memory order</h2>
 * A synchronous call returns once its output holds the result: the writes to the output happen
 * before the return, and the caller's writes to the input before the call are seen by it. An
 * {@code *Async} call may read the input and write the output until its {@link Handle} is done:
 * touch neither before {@link Handle#await()} returns.
 *
 * <h2>Threads</h2>
 * Calls run one at a time in the order they are made, on the communicator's own thread. Calls
 * from several threads are safe, but their order then decides the sequence that every rank must
 * repeat: drive a communicator from one thread per rank.
 *
 * <h2>Timeouts and failures</h2>
 * Every wait is bounded by {@link #timeout()} (per window of a large message). A peer that
 * fails, leaves or does not arrive in time makes the call throw a {@link CollectiveException}
 * naming this rank, the peer, the phase and the timeout; the peers are told at once. After a
 * failure the communicator is broken: every later call throws, naming the first cause, and it
 * must be closed (in Spark the task's end does it). {@link #close()} releases shared memory,
 * sockets and threads, after a failure too.
 */
public interface Communicator extends AutoCloseable {
  // ---- who is who ----

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
   * This rank's place in node-major order (nodes in order of their lowest rank, ranks in rank
   * order inside a node): the order of reduce-scatter and all-gather slices.
   *
   * @return this rank's topology rank, {@code 0..size()-1}
   */
  int topologyRank();

  /**
   * This rank's index among the ranks of its node, in rank order (for example, which local GPU
   * it uses).
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
   * The index of this rank's node; nodes are numbered in order of their lowest rank.
   *
   * @return {@code 0..nodeCount()-1}
   */
  int nodeRank();

  /**
   * The number of nodes (hosts) the ranks span.
   *
   * @return the nodes of this communicator
   */
  int nodeCount();

  /**
   * How long any one wait of a collective may take before the call fails (per window of a large
   * message); {@code spark.treeline.timeout} in Spark.
   *
   * @return the timeout of every wait
   */
  Duration timeout();

  /**
   * This rank's slice of a message of {@code count} elements of {@code type}: what it ends with
   * after a reduce-scatter and what it contributes to an all-gather.
   *
   * @param count elements of the whole message
   * @param type the element type (slice boundaries fall on multiples of the plans' alignment,
   *     64 bytes by default)
   * @return this rank's elements {@code [lo, hi)}
   */
  default Slice slice(long count, DataType type) {
    return slice(count, type, rank());
  }

  /**
   * Rank {@code rank}'s slice of a message of {@code count} elements of {@code type}; the same on
   * every rank.
   *
   * @param count elements of the whole message
   * @param type the element type
   * @param rank a rank, as {@link #rank()} numbers ranks
   * @return that rank's elements {@code [lo, hi)}
   */
  Slice slice(long count, DataType type, int rank);

  // ---- ByteBuffer forms: any DataType ----

  /**
   * Every rank ends with the elementwise reduction over all ranks of their inputs, bit for bit
   * the same on every rank. Bytes {@code [0, count * type.size())} by absolute index; positions
   * and limits are ignored.
   *
   * @param in the input, direct and in native order
   * @param out the output, direct, native order, not read-only (may be {@code in})
   * @param count elements
   * @param type the element type
   * @param op the reduction ({@link ReduceOp#AVG} divides the sum by {@link #size()} once)
   */
  void allReduce(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op);

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)}, started
   * asynchronously: leave both buffers alone until the handle is done.
   *
   * @param in the input, direct and in native order
   * @param out the output, direct, native order, not read-only (may be {@code in})
   * @param count elements
   * @param type the element type
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op);

  /**
   * Every rank's {@code out} ends with rank {@code root}'s {@code in}.
   *
   * @param in the input (read on {@code root} only), direct and in native order
   * @param out the output, direct, native order, not read-only (may be {@code in})
   * @param count elements
   * @param type the element type
   * @param root the sending rank, as {@link #rank()} numbers ranks (not
   *     {@link #topologyRank()})
   */
  void broadcast(ByteBuffer in, ByteBuffer out, long count, DataType type, int root);

  /**
   * This rank ends with its {@link #slice(long, DataType)} of the message reduced over all
   * ranks, at the slice's positions of {@code out}; the rest of {@code out} is unspecified.
   *
   * @param in the whole message, direct and in native order
   * @param out the output, as long as the message, direct, native order, not read-only
   * @param count elements of the whole message
   * @param type the element type
   * @param op the reduction
   */
  void reduceScatter(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op);

  /**
   * Each rank contributes its {@link #slice(long, DataType)} of {@code in}; every rank's
   * {@code out} ends with all of them, each at its slice's positions.
   *
   * @param in the input (only this rank's slice is read), direct and in native order
   * @param out the output, as long as the message, direct, native order, not read-only
   * @param count elements of the whole message
   * @param type the element type
   */
  void allGather(ByteBuffer in, ByteBuffer out, long count, DataType type);

  /** Returns when every rank has called it (a collective like the others). */
  void barrier();

  /**
   * Releases shared memory, sockets and threads; safe after a failure and twice. A peer still
   * waiting for this rank fails at once instead of at its timeout.
   */
  @Override
  void close();

  // ---- float[] and FloatBuffer (F32) ----

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code float}s ({@link DataType#F32}):
   * elements {@code [inOffset, inOffset + count)} of {@code in} reduced into
   * {@code [outOffset, outOffset + count)} of {@code out} (which may be {@code in}).
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   */
  void allReduce(float[] in, int inOffset, float[] out, int outOffset, int count, ReduceOp op);

  /**
   * In place over the whole array: {@code allReduce(data, 0, data, 0, data.length, op)}.
   *
   * @param data the input, overwritten by the result
   * @param op the reduction
   */
  default void allReduce(float[] data, ReduceOp op) {
    allReduce(data, 0, data, 0, data.length, op);
  }

  /**
   * {@link #allReduce(float[], int, float[], int, int, ReduceOp)}, started asynchronously: leave
   * both arrays alone until the handle is done.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(float[] in, int inOffset, float[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on {@code float}s: rank {@code root}'s elements
   * {@code [inOffset, inOffset + count)} end in {@code [outOffset, outOffset + count)} of every
   * rank's {@code out}.
   *
   * @param in the input (read on {@code root} only)
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to send
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(float[] in, int inOffset, float[] out, int outOffset, int count, int root);

  /**
   * In place over the whole array: {@code broadcast(data, 0, data, 0, data.length, root)}.
   *
   * @param data root's input; on the other ranks overwritten by it
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  default void broadcast(float[] data, int root) {
    broadcast(data, 0, data, 0, data.length, root);
  }

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code float}s: the message is
   * {@code [inOffset, inOffset + count)} of {@code in}; this rank's {@link #slice(long,
   * DataType)} of it, reduced, lands at the same positions of {@code [outOffset, outOffset +
   * count)} in {@code out}.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   * @param op the reduction
   */
  void reduceScatter(float[] in, int inOffset, float[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on {@code float}s: this rank contributes its
   * {@link #slice(long, DataType)} of {@code [inOffset, inOffset + count)}; every rank's
   * {@code [outOffset, outOffset + count)} ends with every rank's slice.
   *
   * @param in the input (only this rank's slice is read)
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   */
  void allGather(float[] in, int inOffset, float[] out, int outOffset, int count);

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code FloatBuffer} (heap or direct, any byte order):
   * elements {@code [0, count)} by absolute index; positions and limits are not changed.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   */
  void allReduce(FloatBuffer in, FloatBuffer out, int count, ReduceOp op);

  /**
   * {@link #allReduce(FloatBuffer, FloatBuffer, int, ReduceOp)}, started asynchronously: leave both buffers
   * alone until the handle is done.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(FloatBuffer in, FloatBuffer out, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on a {@code FloatBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (read on {@code root} only)
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to send, at most each buffer's limit
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(FloatBuffer in, FloatBuffer out, int count, int root);

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code FloatBuffer}: elements {@code [0, count)}
   * by absolute index; this rank's slice of {@code out} ends reduced.
   *
   * @param in the input
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   * @param op the reduction
   */
  void reduceScatter(FloatBuffer in, FloatBuffer out, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on a {@code FloatBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (only this rank's slice is read)
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   */
  void allGather(FloatBuffer in, FloatBuffer out, int count);

  // ---- double[] and DoubleBuffer (F64) ----

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code double}s ({@link DataType#F64}):
   * elements {@code [inOffset, inOffset + count)} of {@code in} reduced into
   * {@code [outOffset, outOffset + count)} of {@code out} (which may be {@code in}).
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   */
  void allReduce(double[] in, int inOffset, double[] out, int outOffset, int count, ReduceOp op);

  /**
   * In place over the whole array: {@code allReduce(data, 0, data, 0, data.length, op)}.
   *
   * @param data the input, overwritten by the result
   * @param op the reduction
   */
  default void allReduce(double[] data, ReduceOp op) {
    allReduce(data, 0, data, 0, data.length, op);
  }

  /**
   * {@link #allReduce(double[], int, double[], int, int, ReduceOp)}, started asynchronously: leave
   * both arrays alone until the handle is done.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(double[] in, int inOffset, double[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on {@code double}s: rank {@code root}'s elements
   * {@code [inOffset, inOffset + count)} end in {@code [outOffset, outOffset + count)} of every
   * rank's {@code out}.
   *
   * @param in the input (read on {@code root} only)
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to send
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(double[] in, int inOffset, double[] out, int outOffset, int count, int root);

  /**
   * In place over the whole array: {@code broadcast(data, 0, data, 0, data.length, root)}.
   *
   * @param data root's input; on the other ranks overwritten by it
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  default void broadcast(double[] data, int root) {
    broadcast(data, 0, data, 0, data.length, root);
  }

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code double}s: the message is
   * {@code [inOffset, inOffset + count)} of {@code in}; this rank's {@link #slice(long,
   * DataType)} of it, reduced, lands at the same positions of {@code [outOffset, outOffset +
   * count)} in {@code out}.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   * @param op the reduction
   */
  void reduceScatter(double[] in, int inOffset, double[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on {@code double}s: this rank contributes its
   * {@link #slice(long, DataType)} of {@code [inOffset, inOffset + count)}; every rank's
   * {@code [outOffset, outOffset + count)} ends with every rank's slice.
   *
   * @param in the input (only this rank's slice is read)
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   */
  void allGather(double[] in, int inOffset, double[] out, int outOffset, int count);

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code DoubleBuffer} (heap or direct, any byte order):
   * elements {@code [0, count)} by absolute index; positions and limits are not changed.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   */
  void allReduce(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op);

  /**
   * {@link #allReduce(DoubleBuffer, DoubleBuffer, int, ReduceOp)}, started asynchronously: leave both buffers
   * alone until the handle is done.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on a {@code DoubleBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (read on {@code root} only)
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to send, at most each buffer's limit
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(DoubleBuffer in, DoubleBuffer out, int count, int root);

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code DoubleBuffer}: elements {@code [0, count)}
   * by absolute index; this rank's slice of {@code out} ends reduced.
   *
   * @param in the input
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   * @param op the reduction
   */
  void reduceScatter(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on a {@code DoubleBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (only this rank's slice is read)
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   */
  void allGather(DoubleBuffer in, DoubleBuffer out, int count);

  // ---- int[] and IntBuffer (I32) ----

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code int}s ({@link DataType#I32}):
   * elements {@code [inOffset, inOffset + count)} of {@code in} reduced into
   * {@code [outOffset, outOffset + count)} of {@code out} (which may be {@code in}).
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   */
  void allReduce(int[] in, int inOffset, int[] out, int outOffset, int count, ReduceOp op);

  /**
   * In place over the whole array: {@code allReduce(data, 0, data, 0, data.length, op)}.
   *
   * @param data the input, overwritten by the result
   * @param op the reduction
   */
  default void allReduce(int[] data, ReduceOp op) {
    allReduce(data, 0, data, 0, data.length, op);
  }

  /**
   * {@link #allReduce(int[], int, int[], int, int, ReduceOp)}, started asynchronously: leave
   * both arrays alone until the handle is done.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(int[] in, int inOffset, int[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on {@code int}s: rank {@code root}'s elements
   * {@code [inOffset, inOffset + count)} end in {@code [outOffset, outOffset + count)} of every
   * rank's {@code out}.
   *
   * @param in the input (read on {@code root} only)
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to send
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(int[] in, int inOffset, int[] out, int outOffset, int count, int root);

  /**
   * In place over the whole array: {@code broadcast(data, 0, data, 0, data.length, root)}.
   *
   * @param data root's input; on the other ranks overwritten by it
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  default void broadcast(int[] data, int root) {
    broadcast(data, 0, data, 0, data.length, root);
  }

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code int}s: the message is
   * {@code [inOffset, inOffset + count)} of {@code in}; this rank's {@link #slice(long,
   * DataType)} of it, reduced, lands at the same positions of {@code [outOffset, outOffset +
   * count)} in {@code out}.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   * @param op the reduction
   */
  void reduceScatter(int[] in, int inOffset, int[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on {@code int}s: this rank contributes its
   * {@link #slice(long, DataType)} of {@code [inOffset, inOffset + count)}; every rank's
   * {@code [outOffset, outOffset + count)} ends with every rank's slice.
   *
   * @param in the input (only this rank's slice is read)
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   */
  void allGather(int[] in, int inOffset, int[] out, int outOffset, int count);

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code IntBuffer} (heap or direct, any byte order):
   * elements {@code [0, count)} by absolute index; positions and limits are not changed.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   */
  void allReduce(IntBuffer in, IntBuffer out, int count, ReduceOp op);

  /**
   * {@link #allReduce(IntBuffer, IntBuffer, int, ReduceOp)}, started asynchronously: leave both buffers
   * alone until the handle is done.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(IntBuffer in, IntBuffer out, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on a {@code IntBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (read on {@code root} only)
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to send, at most each buffer's limit
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(IntBuffer in, IntBuffer out, int count, int root);

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code IntBuffer}: elements {@code [0, count)}
   * by absolute index; this rank's slice of {@code out} ends reduced.
   *
   * @param in the input
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   * @param op the reduction
   */
  void reduceScatter(IntBuffer in, IntBuffer out, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on a {@code IntBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (only this rank's slice is read)
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   */
  void allGather(IntBuffer in, IntBuffer out, int count);

  // ---- long[] and LongBuffer (I64) ----

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code long}s ({@link DataType#I64}):
   * elements {@code [inOffset, inOffset + count)} of {@code in} reduced into
   * {@code [outOffset, outOffset + count)} of {@code out} (which may be {@code in}).
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   */
  void allReduce(long[] in, int inOffset, long[] out, int outOffset, int count, ReduceOp op);

  /**
   * In place over the whole array: {@code allReduce(data, 0, data, 0, data.length, op)}.
   *
   * @param data the input, overwritten by the result
   * @param op the reduction
   */
  default void allReduce(long[] data, ReduceOp op) {
    allReduce(data, 0, data, 0, data.length, op);
  }

  /**
   * {@link #allReduce(long[], int, long[], int, int, ReduceOp)}, started asynchronously: leave
   * both arrays alone until the handle is done.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to reduce
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(long[] in, int inOffset, long[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on {@code long}s: rank {@code root}'s elements
   * {@code [inOffset, inOffset + count)} end in {@code [outOffset, outOffset + count)} of every
   * rank's {@code out}.
   *
   * @param in the input (read on {@code root} only)
   * @param inOffset the input's first element
   * @param out the output
   * @param outOffset the output's first element
   * @param count elements to send
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(long[] in, int inOffset, long[] out, int outOffset, int count, int root);

  /**
   * In place over the whole array: {@code broadcast(data, 0, data, 0, data.length, root)}.
   *
   * @param data root's input; on the other ranks overwritten by it
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  default void broadcast(long[] data, int root) {
    broadcast(data, 0, data, 0, data.length, root);
  }

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on {@code long}s: the message is
   * {@code [inOffset, inOffset + count)} of {@code in}; this rank's {@link #slice(long,
   * DataType)} of it, reduced, lands at the same positions of {@code [outOffset, outOffset +
   * count)} in {@code out}.
   *
   * @param in the input
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   * @param op the reduction
   */
  void reduceScatter(long[] in, int inOffset, long[] out, int outOffset, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on {@code long}s: this rank contributes its
   * {@link #slice(long, DataType)} of {@code [inOffset, inOffset + count)}; every rank's
   * {@code [outOffset, outOffset + count)} ends with every rank's slice.
   *
   * @param in the input (only this rank's slice is read)
   * @param inOffset the input's first element
   * @param out the output, as long as the message
   * @param outOffset the output's first element
   * @param count elements of the whole message
   */
  void allGather(long[] in, int inOffset, long[] out, int outOffset, int count);

  /**
   * {@link #allReduce(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code LongBuffer} (heap or direct, any byte order):
   * elements {@code [0, count)} by absolute index; positions and limits are not changed.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   */
  void allReduce(LongBuffer in, LongBuffer out, int count, ReduceOp op);

  /**
   * {@link #allReduce(LongBuffer, LongBuffer, int, ReduceOp)}, started asynchronously: leave both buffers
   * alone until the handle is done.
   *
   * @param in the input
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to reduce, at most each buffer's limit
   * @param op the reduction
   * @return the collective in flight
   */
  Handle allReduceAsync(LongBuffer in, LongBuffer out, int count, ReduceOp op);

  /**
   * {@link #broadcast(ByteBuffer, ByteBuffer, long, DataType, int)} on a {@code LongBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (read on {@code root} only)
   * @param out the output (may be {@code in}; not read-only)
   * @param count elements to send, at most each buffer's limit
   * @param root the sending rank, as {@link #rank()} numbers ranks
   */
  void broadcast(LongBuffer in, LongBuffer out, int count, int root);

  /**
   * {@link #reduceScatter(ByteBuffer, ByteBuffer, long, DataType, ReduceOp)} on a {@code LongBuffer}: elements {@code [0, count)}
   * by absolute index; this rank's slice of {@code out} ends reduced.
   *
   * @param in the input
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   * @param op the reduction
   */
  void reduceScatter(LongBuffer in, LongBuffer out, int count, ReduceOp op);

  /**
   * {@link #allGather(ByteBuffer, ByteBuffer, long, DataType)} on a {@code LongBuffer}: elements {@code [0, count)} by absolute
   * index.
   *
   * @param in the input (only this rank's slice is read)
   * @param out the output, as long as the message (may be {@code in}; not read-only)
   * @param count elements of the whole message, at most each buffer's limit
   */
  void allGather(LongBuffer in, LongBuffer out, int count);

}

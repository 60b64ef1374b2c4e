package io.treeline.barrier;

import io.treeline.comm.HostCommunicator;
import io.treeline.comm.Window;
import io.treeline.conf.TreelineConf;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.Handle;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Averages a model's gradients across the ranks of a communicator, as PyTorch DDP does: the
 * gradients, registered once in the order the backward pass produces them, are packed into
 * buckets of about {@code bucketBytes} (one data type per bucket), and each bucket's allreduce
 * starts, asynchronously, as soon as the last of its gradients is {@link #ready}. {@link #await}
 * waits for all of them and writes the averages back into the arrays.
 *
 * <pre>{@code
 * GradientAggregator agg = new GradientAggregator(comm);   // spark.treeline.bucketBytes
 * int w1 = agg.register(gradW1);  int b1 = agg.register(gradB1);   // once
 * for (each step) {
 *   backward();                         // fills gradW1, gradB1 ...
 *   agg.ready(b1); agg.ready(w1);       // as each is final; buckets start on their own
 *   agg.await();                        // averaged in place, identical on every rank
 * }
 * }</pre>
 * Not thread-safe: one training thread per rank drives it. Per step it allocates nothing
 * beyond the communicator's call bookkeeping.
 *
 * <p>On the host communicator ({@link HostCommunicator}), a bucket is a {@link Window} of its
 * registered memory where one fits ({@link HostCommunicator#windowBytesLeft()}): a gradient is copied once into the segment's INPUT
 * and once out of its OUTPUT, and the allreduce runs in place. A bucket that does not fit has its
 * own buffer, which the communicator copies into and out of the segment (four copies).
 */
public final class GradientAggregator implements AutoCloseable {
  private final Communicator comm;
  /** The same communicator where it has registered windows, else null. */
  private final HostCommunicator host;
  private final long bucketBytes;
  private final List<Entry> entries = new ArrayList<>();
  private final List<Bucket> buckets = new ArrayList<>();
  private boolean frozen;

  /**
   * An aggregator over {@code comm} with buckets of {@code spark.treeline.bucketBytes} (25 MiB by
   * default): the key of the running Spark application's configuration, or its default outside
   * Spark.
   *
   * @param comm the communicator the buckets are averaged over
   */
  public GradientAggregator(Communicator comm) {
    this(comm, configuredBucketBytes());
  }

  /**
   * An aggregator over {@code comm} with buckets of about {@code bucketBytes}, whatever the
   * configuration says.
   *
   * @param comm the communicator the buckets are averaged over
   * @param bucketBytes bytes per bucket, at least 1 KiB
   * @throws IllegalArgumentException when {@code bucketBytes} is below 1 KiB
   */
  public GradientAggregator(Communicator comm, long bucketBytes) {
    if (comm == null) {
      throw new IllegalArgumentException("GradientAggregator needs a communicator "
          + "(Treeline.communicator() inside a barrier stage)");
    }
    if (bucketBytes < 1024) {
      throw new IllegalArgumentException("bucketBytes must be at least 1 KiB, got "
          + bucketBytes);
    }
    this.comm = comm;
    this.host = comm instanceof HostCommunicator h ? h : null;
    this.bucketBytes = bucketBytes;
  }

  /**
   * The task's aggregator: {@code new GradientAggregator(Treeline.communicator())}, buckets of
   * {@code spark.treeline.bucketBytes}.
   *
   * @return an aggregator over the task's communicator
   * @throws IllegalStateException outside a barrier stage task
   */
  public static GradientAggregator forTask() {
    return new GradientAggregator(Treeline.communicator());
  }

  /**
   * {@code spark.treeline.bucketBytes} of the running Spark application (driver or executor), or
   * the key's default where there is none.
   */
  static long configuredBucketBytes() {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    TreelineConf conf = env == null ? new TreelineConf(java.util.Map.of())
        : Treeline.conf(env.conf());
    return conf.get(TreelineConf.BUCKET_BYTES);
  }

  /**
   * The size the buckets are cut to.
   *
   * @return bytes per bucket, from the constructor or the configuration
   */
  public long bucketBytes() {
    return bucketBytes;
  }

  /**
   * Adds a gradient, in the order the backward pass produces them; before the first
   * {@link #ready}. Its averages are written back into the array by {@link #await}.
   *
   * @param grad the gradient, read at {@code ready} and overwritten at {@code await}
   * @return the gradient's id for {@link #ready}
   */
  public int register(float[] grad) {
    return add(new Entry(grad, null, null, DataType.F32, grad.length));
  }

  /**
   * {@link #register(float[])} for a {@code double[]} gradient (its own buckets).
   *
   * @param grad the gradient
   * @return the gradient's id for {@link #ready}
   */
  public int register(double[] grad) {
    return add(new Entry(null, grad, null, DataType.F64, grad.length));
  }

  /**
   * {@link #register(float[])} for a direct buffer of {@code count} elements of {@code type}
   * from index 0 (read in native order).
   *
   * @param grad the gradient, a direct buffer
   * @param type its element type
   * @param count its elements
   * @return the gradient's id for {@link #ready}
   */
  public int register(ByteBuffer grad, DataType type, long count) {
    if (!grad.isDirect()) {
      throw new IllegalArgumentException("register a heap gradient as float[] or double[]");
    }
    return add(new Entry(null, null, grad.duplicate().order(ByteOrder.nativeOrder()), type,
        count));
  }

  private int add(Entry e) {
    if (frozen) {
      throw new IllegalStateException("register every gradient before the first ready()");
    }
    entries.add(e);
    return entries.size() - 1;
  }

  /**
   * Gradient {@code id} is final for this step: it is copied into its bucket, and the bucket's
   * allreduce starts once all its gradients are ready.
   *
   * @param id the id {@code register} returned
   * @throws IllegalStateException when the gradient is already ready in this step
   */
  public void ready(int id) {
    freeze();
    Entry e = entries.get(id);
    Bucket b = e.bucket;
    if (e.readyThisStep) {
      throw new IllegalStateException("gradient " + id + " was marked ready twice in one step");
    }
    e.readyThisStep = true;
    e.copyIn();
    if (++b.ready == b.members.size()) {
      b.handle = b.window != null
          ? host.allReduceAsync(b.window, b.count, b.type, ReduceOp.AVG)
          : comm.allReduceAsync(b.buffer, b.buffer, b.count, b.type, ReduceOp.AVG);
    }
  }

  /**
   * Waits for every bucket and writes the averages into the gradients; the step is over.
   *
   * @throws IllegalStateException when a gradient was not {@link #ready} in this step
   * @throws io.treeline.core.CollectiveException when an allreduce failed
   */
  public void await() {
    for (Bucket b : buckets) {
      if (b.handle == null) {
        throw new IllegalStateException("await() before every gradient was ready(): bucket "
            + buckets.indexOf(b) + " has " + b.ready + " of " + b.members.size());
      }
    }
    for (Bucket b : buckets) {
      b.handle.await();
      for (Entry e : b.members) {
        e.copyOut();
        e.readyThisStep = false;
      }
      b.handle = null;
      b.ready = 0;
    }
  }

  /**
   * {@link #ready} for every gradient in registration order, then {@link #await}: the whole
   * step's averaging in one call.
   */
  public void allReduce() {
    freeze();
    for (int i = 0; i < entries.size(); i++) {
      ready(i);
    }
    await();
  }

  /**
   * The number of buckets; fixes the registered gradients.
   *
   * @return buckets the gradients are packed into
   */
  public int buckets() {
    freeze();
    return buckets.size();
  }

  /**
   * Buckets that live in registered windows (the others copy through their own buffer).
   *
   * @return how many of {@link #buckets()} are windows of the communicator's segment
   */
  public int registeredBuckets() {
    freeze();
    return (int) buckets.stream().filter(b -> b.window != null).count();
  }

  private void freeze() {
    if (frozen) {
      return;
    }
    frozen = true;
    Bucket cur = null;
    for (Entry e : entries) {
      long bytes = e.count * e.type.size();
      if (cur == null || cur.type != e.type || (cur.count > 0
          && (cur.count * cur.type.size() + bytes) > bucketBytes)) {
        cur = new Bucket(e.type);
        buckets.add(cur);
      }
      e.bucket = cur;
      e.offset = cur.count;
      cur.members.add(e);
      cur.count += e.count;
    }
    for (Bucket b : buckets) {
      long bytes = Math.max(1, b.count * b.type.size());
      if (host != null && bytes <= host.windowBytesLeft()) {
        b.window = host.reserveWindow(bytes);
        b.buffer = b.window.input();
        b.result = b.window.output();
      } else {
        b.buffer = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        b.result = b.buffer; // reduced in place through the segment
      }
      b.floats = b.buffer.asFloatBuffer();
      b.doubles = b.buffer.asDoubleBuffer();
      b.resultFloats = b.result.asFloatBuffer();
      b.resultDoubles = b.result.asDoubleBuffer();
    }
  }

  /**
   * Waits for any bucket still in flight and gives the windows back; the communicator stays
   * open (the task owns it).
   */
  @Override
  public void close() {
    for (Bucket b : buckets) {
      if (b.handle != null) {
        b.handle.await();
      }
    }
    for (int i = buckets.size() - 1; i >= 0; i--) {
      Bucket b = buckets.get(i);
      if (b.window != null) {
        host.releaseWindow(b.window);
        b.window = null;
      }
    }
  }

  private static final class Bucket {
    final DataType type;
    final List<Entry> members = new ArrayList<>();
    long count;
    int ready;
    Window window;
    ByteBuffer buffer;
    ByteBuffer result;
    FloatBuffer floats;
    DoubleBuffer doubles;
    FloatBuffer resultFloats;
    DoubleBuffer resultDoubles;
    Handle handle;

    Bucket(DataType type) {
      this.type = type;
    }
  }

  private static final class Entry {
    final float[] f;
    final double[] d;
    final ByteBuffer direct;
    final DataType type;
    final long count;
    Bucket bucket;
    long offset;
    boolean readyThisStep;

    Entry(float[] f, double[] d, ByteBuffer direct, DataType type, long count) {
      this.f = f;
      this.d = d;
      this.direct = direct;
      this.type = type;
      this.count = count;
    }

    void copyIn() {
      int off = (int) offset;
      if (f != null) {
        bucket.floats.put(off, f, 0, f.length);
      } else if (d != null) {
        bucket.doubles.put(off, d, 0, d.length);
      } else {
        int es = type.size();
        bucket.buffer.put(off * es, direct, 0, (int) (count * es));
      }
    }

    void copyOut() {
      int off = (int) offset;
      if (f != null) {
        bucket.resultFloats.get(off, f, 0, f.length);
      } else if (d != null) {
        bucket.resultDoubles.get(off, d, 0, d.length);
      } else {
        int es = type.size();
        direct.put(0, bucket.result, off * es, (int) (count * es));
      }
    }
  }
}

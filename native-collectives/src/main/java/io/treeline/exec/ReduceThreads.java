package io.treeline.exec;

import io.treeline.core.CollectiveException;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.core.Tuning;
import io.treeline.reduce.Reducer;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * Helper threads that share one rank's large reduce and copy steps when the node has more cores
 * than ranks: a step of {@code count} elements is cut into up to {@code threads} parts on
 * cache-line boundaries, the caller's thread runs part 0 and each helper one other part, each
 * with its own {@link Reducer}, and the call returns when every part is done. Every element is
 * combined from the same inputs in the same order as by one thread, so the bits are the same.
 *
 * <p>Helpers spin for {@link #SPIN_NANOS} after a part (the next step of the same call follows
 * within microseconds), then park until the next part is posted; between calls they are parked,
 * taking no core. They are daemon threads, stopped by {@link #close()}.
 *
 * <p>Memory order: the caller posts a part with a volatile write after its own acquire of the
 * peers' flags, and a helper publishes its part done with a volatile write that the caller reads
 * before it signals, so the peers' writes are visible to the helper and the helper's to the
 * peers. Single caller: one instance per rank, used by its collective thread only. After
 * construction nothing allocates.
 */
public final class ReduceThreads implements AutoCloseable {
  /**
   * Below this many bytes per part a step is not worth a hand-off (a wake-up is ~5-50 us, and a
   * node whose ranks all copy at once is bound by memory, not cores). 1 MiB from the 16-core
   * H200 host (docs/BENCHMARKS.md, 2026-12-03 fourth session): at 256 KiB, 4 ranks' 1 MiB calls
   * ran 1.41-1.65x slower than before the helpers existed; at 1 MiB they are level (0.97) and
   * 16 / 64 MiB keep most of the gain (0.59 / 0.39). The system property
   * {@code treeline.reduceMinPartBytes} overrides it (measuring the effect).
   */
  public static final long MIN_PART_BYTES = Tuning.REDUCE_MIN_PART_BYTES.getLong();
  /** How long a helper spins for the next part before it parks. */
  public static final long SPIN_NANOS = 50_000;
  /** The most threads (the caller included) one rank uses. */
  public static final int MAX_THREADS = 8;
  /** How long {@link #close()} waits for the helpers in all. */
  public static final long CLOSE_WAIT_MILLIS = 10_000;

  private final int rank;
  private final Reducer reducer;
  private final Helper[] helpers;
  private final long[] ownOffsets;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.forWaiters(1);
  private long posted;

  /**
   * Threads (the caller's included) for one rank when {@code localRanks} ranks share this
   * machine: its cores divided among the ranks, 1 to {@link #MAX_THREADS}. The system property
   * {@code treeline.reduceThreads} overrides it (tests, and measuring the effect).
   */
  public static int forNode(int localRanks) {
    if (!Tuning.REDUCE_THREADS.get().equals("auto")) {
      return (int) Math.max(1, Math.min(MAX_THREADS, Tuning.REDUCE_THREADS.getLong()));
    }
    int cores = Runtime.getRuntime().availableProcessors();
    return Math.max(1, Math.min(MAX_THREADS, cores / Math.max(1, localRanks)));
  }

  /**
   * @param threads threads in all, the caller's included (1: no helpers, every step inline)
   * @param maxInputs the most inputs of one reduce
   * @param reducer the caller's reducer (part 0)
   */
  public ReduceThreads(int rank, int threads, int maxInputs, Reducer reducer) {
    this(rank, threads, maxInputs, reducer, Reducer::create);
  }

  /** @param helperReducers makes each helper's own reducer */
  public ReduceThreads(int rank, int threads, int maxInputs, Reducer reducer,
      java.util.function.Supplier<Reducer> helperReducers) {
    if (threads < 1 || threads > MAX_THREADS) {
      throw new IllegalArgumentException("reduce threads must be 1.." + MAX_THREADS + ", got "
          + threads);
    }
    this.rank = rank;
    this.reducer = reducer;
    this.helpers = new Helper[threads - 1];
    this.ownOffsets = new long[maxInputs];
    for (int i = 0; i < helpers.length; i++) {
      helpers[i] = new Helper(maxInputs, helperReducers.get());
      Thread t = new Thread(helpers[i], "treeline-reduce-" + rank + "-" + (i + 1));
      t.setDaemon(true);
      helpers[i].thread = t;
      t.start();
    }
  }

  /** Threads in all, the caller's included. */
  public int threads() {
    return helpers.length + 1;
  }

  /**
   * {@link Reducer#reduce} of the same arguments, shared among the threads when it is large
   * (every input and the output at the same byte offset {@code offset}).
   */
  public void reduce(DataType type, ReduceOp op, ByteBuffer[] src, long offset, int n,
      ByteBuffer dst, long count, boolean finish, int divisor, long deadline,
      Duration timeout) {
    reduce(type, op, src, offset, n, dst, count, finish, divisor, deadline, timeout, -1, 0);
  }

  /**
   * {@link #reduce}, with input {@code shifted} (none when negative) read {@code shift} bytes
   * further on than the others: the caller's own buffer standing in for its registered INPUT
   * ({@link PlanRunner}'s direct input), whose elements sit at another byte offset.
   */
  public void reduce(DataType type, ReduceOp op, ByteBuffer[] src, long offset, int n,
      ByteBuffer dst, long count, boolean finish, int divisor, long deadline,
      Duration timeout, int shifted, long shift) {
    int es = type.size();
    int parts = parts(count * es);
    if (parts == 1) {
      reduceInline(type, op, src, offset, n, dst, count, finish, divisor, shifted, shift);
      return;
    }
    int align = Math.max(1, 64 / es); // parts start on cache lines
    long units = (count + align - 1) / align;
    long gen = ++posted;
    for (int k = 1; k < parts; k++) {
      long lo = Math.min(count, units * k / parts * align);
      long hi = Math.min(count, units * (k + 1) / parts * align);
      helpers[k - 1].post(gen, type, op, src, n, offset + lo * es, dst, hi - lo, finish,
          divisor, shifted, shift);
    }
    long hi0 = Math.min(count, units / parts * align);
    Throwable mine = null;
    try {
      reduceInline(type, op, src, offset, n, dst, hi0, finish, divisor, shifted, shift);
    } catch (RuntimeException | Error e) {
      mine = e;
    }
    await(parts, gen, deadline, timeout, mine);
  }

  private void reduceInline(DataType type, ReduceOp op, ByteBuffer[] src, long offset, int n,
      ByteBuffer dst, long count, boolean finish, int divisor, int shifted, long shift) {
    long[] offs = ownOffsets;
    if (n == 1) {
      reducer.copy(type, op, src[0], shifted == 0 ? offset + shift : offset, dst, offset, count,
          finish, divisor);
      return;
    }
    for (int i = 0; i < n; i++) {
      offs[i] = i == shifted ? offset + shift : offset;
    }
    reducer.reduce(type, op, src, offs, n, dst, offset, count, finish, divisor);
  }

  /** {@code dst = src} over {@code count} elements at byte offsets of their own, shared. */
  public void copy(DataType type, ByteBuffer src, long srcOffset, ByteBuffer dst,
      long dstOffset, long count, long deadline, Duration timeout) {
    int es = type.size();
    int parts = parts(count * es);
    if (parts == 1) {
      reducer.copy(type, ReduceOp.SUM, src, srcOffset, dst, dstOffset, count, false, 1);
      return;
    }
    long bytes = count * es;
    long gen = ++posted;
    for (int k = 1; k < parts; k++) {
      long lo = bytes * k / parts / 64 * 64;
      long hi = k + 1 == parts ? bytes : bytes * (k + 1) / parts / 64 * 64;
      helpers[k - 1].postCopy(gen, src, srcOffset + lo, dst, dstOffset + lo, hi - lo);
    }
    Throwable mine = null;
    try {
      reducer.copy(DataType.U8, ReduceOp.SUM, src, srcOffset, dst, dstOffset,
          bytes / parts / 64 * 64, false, 1);
    } catch (RuntimeException | Error e) {
      mine = e;
    }
    await(parts, gen, deadline, timeout, mine);
  }

  private int parts(long bytes) {
    return (int) Math.max(1, Math.min(helpers.length + 1, bytes / MIN_PART_BYTES));
  }

  private void await(int parts, long gen, long deadline, Duration timeout, Throwable mine) {
    Throwable err = mine;
    for (int k = 1; k < parts; k++) {
      Helper h = helpers[k - 1];
      while (h.done != gen) {
        if (System.nanoTime() - deadline > 0) {
          // a helper only computes: past the deadline it is stuck, and its part unfinished
          throw CollectiveException.timeout(rank, rank, "reduce thread " + k, "its part of a "
              + "reduce", timeout);
        }
        idle.idle();
      }
      idle.reset();
      if (h.error != null && err == null) {
        err = h.error;
      }
      h.error = null;
    }
    if (err instanceof RuntimeException e) {
      throw e;
    }
    if (err instanceof Error e) {
      throw e;
    }
  }

  /**
   * Stops the helpers, each after the part it runs (a part is a bounded copy or reduce of
   * registered memory, so this waits up to {@link #CLOSE_WAIT_MILLIS} for them before the
   * caller unmaps that memory); safe twice.
   */
  @Override
  public void close() {
    for (Helper h : helpers) {
      h.closed = true;
      LockSupport.unpark(h.thread);
    }
    long until = System.nanoTime() + CLOSE_WAIT_MILLIS * 1_000_000L;
    for (Helper h : helpers) {
      long left = (until - System.nanoTime()) / 1_000_000L;
      try {
        h.thread.join(Math.max(1, left));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** One helper thread and the part it was handed. */
  private static final class Helper implements Runnable {
    final Reducer reducer;
    final ByteBuffer[] src;
    final long[] offsets;
    Thread thread;
    volatile boolean closed;
    volatile boolean parked;
    volatile long posted;
    volatile long done;
    Throwable error; // written before done, read after it
    // the part: plain fields, written before posted and read after it
    boolean copy;
    DataType type;
    ReduceOp op;
    int n;
    ByteBuffer dst;
    long dstOffset;
    long count;
    boolean finish;
    int divisor;

    Helper(int maxInputs, Reducer reducer) {
      this.reducer = reducer;
      this.src = new ByteBuffer[maxInputs];
      this.offsets = new long[maxInputs];
    }

    void post(long gen, DataType type, ReduceOp op, ByteBuffer[] from, int n, long offset,
        ByteBuffer dst, long count, boolean finish, int divisor, int shifted, long shift) {
      this.copy = false;
      this.type = type;
      this.op = op;
      this.n = n;
      for (int i = 0; i < n; i++) {
        src[i] = from[i];
        offsets[i] = i == shifted ? offset + shift : offset;
      }
      this.dst = dst;
      this.dstOffset = offset;
      this.count = count;
      this.finish = finish;
      this.divisor = divisor;
      publish(gen);
    }

    void postCopy(long gen, ByteBuffer from, long fromOffset, ByteBuffer dst, long dstOffset,
        long bytes) {
      this.copy = true;
      this.n = 1;
      src[0] = from;
      offsets[0] = fromOffset;
      this.dst = dst;
      this.dstOffset = dstOffset;
      this.count = bytes;
      publish(gen);
    }

    private void publish(long gen) {
      posted = gen; // volatile: the part's fields before it
      if (parked) {
        LockSupport.unpark(thread);
      }
    }

    @Override
    public void run() {
      long seen = 0;
      long spinStart = System.nanoTime();
      while (!closed) {
        long p = posted;
        if (p == seen) {
          if (System.nanoTime() - spinStart < SPIN_NANOS) {
            Thread.onSpinWait();
            continue;
          }
          parked = true;
          if (posted == seen && !closed) { // re-read after announcing: no lost wake-up
            LockSupport.park(this);
          }
          parked = false;
          continue;
        }
        seen = p;
        try {
          if (copy) {
            reducer.copy(DataType.U8, ReduceOp.SUM, src[0], offsets[0], dst, dstOffset, count,
                false, 1);
          } else {
            reducer.reduce(type, op, src, offsets, n, dst, dstOffset, count, finish, divisor);
          }
        } catch (RuntimeException | Error e) {
          error = e;
        }
        java.util.Arrays.fill(src, 0, n, null);
        dst = null;
        done = seen; // volatile: the part's writes and error before it
        spinStart = System.nanoTime();
      }
    }
  }
}

package io.treeline.reduce;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.core.Tuning;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs the vectorised reducer's kernels once per JVM, on a thread of its own, until C2 has
 * compiled them, so that a rank's first reduce of a kind does not run the Vector API
 * interpreted (where every vector is boxed: 50-100x slower than compiled code, and garbage on the
 * hot path) for its first few thousand calls.
 *
 * <p>Why: a rank may first run a kernel late. Below {@link VectorReducer#MIN_ELEMENTS} elements
 * and for more than two f32 inputs the scalar reducer runs, and across nodes below the network
 * grain only the last rank of a node receives and reduces network messages, so the other ranks'
 * first two-input reduce came at 64 KiB in a sweep. There, on 16 cores at 2x4 and 4x2, the
 * median was 1.35-1.56x the same plan's in JVMs that had run the kernels all along, p99 / median
 * 22-37 and the first call 30-69 ms (2026-12-07, docs/BENCHMARKS.md): the Vector API's classes
 * loaded at that call ({@code -Xlog:class+load}) and the kernels ran boxed until compiled.
 *
 * <p>What: the two-input kernels of f32 and bf16 (SUM and a finished AVG, the gradient forms),
 * f64 SUM, bf16 SUM of four inputs, and the eight-input sums of a node's eight ranks (f32 SUM,
 * bf16 finished AVG: the n-input kernels), each over a mix of lengths (whole
 * blocks, tails, short calls), until three rounds in a row run at compiled speed ({@link
 * #FAST_NANOS_PER_ELEMENT}) or {@link #BUDGET} passes. The mix matters on JDK 17: C2 compiling
 * a kernel first from one long loop (an on-stack replacement on a narrow profile) left it
 * boxing for good in tests, and so did these kinds over short lengths only (bf16 AVG in 3 of 3
 * JVMs). The thread is a daemon and ends by itself. The first communicator of the JVM starts it
 * where the host has cores to spare ({@link #start}) once its transports are connected, and
 * waits up to {@link #WAIT} for it before its first collective. {@code
 * -Dtreeline.warmUpKernels=false} turns it off (measuring what it saves).
 */
public final class KernelWarmUp {
  /** The warm-up thread's name; it is the JVM's, not a communicator's, and ends by itself. */
  public static final String THREAD = "treeline-kernel-warmup";
  /**
   * A round faster than this per element is compiled code: compiled kernels take ~0.05-0.2 ns an
   * element, interpreted or C1 ones (boxing) tens to hundreds.
   */
  private static final double FAST_NANOS_PER_ELEMENT = 2.0;
  /**
   * A communicator's set-up waits this long at most for the warm-up before its first collective
   * (the rest, if any, then runs beside the collectives).
   */
  public static final Duration WAIT = Duration.ofSeconds(2);
  /** The warm-up gives up after this long (a busy machine's compile queue). */
  private static final Duration BUDGET = Duration.ofSeconds(10);
  /**
   * Lengths of one round, in elements: tails, whole blocks, a short call, a long one, and one
   * past a block of more than two inputs.
   */
  private static final int[] LENGTHS = {256, VectorReducer.BLOCK + 5, 1000,
      2 * VectorReducer.BLOCK, 4 * VectorReducer.BLOCK + 7, 300, VectorReducer.WIDE_BLOCK + 5};
  private static final int ROUNDS_FAST = 3;

  private static final AtomicBoolean STARTED = new AtomicBoolean();
  private static final CountDownLatch DONE = new CountDownLatch(1);
  private static volatile String report = "not started";

  private KernelWarmUp() {
  }

  /**
   * Starts the warm-up unless it has started in this JVM, it is turned off, this JVM runs the
   * scalar reducer (no Vector API), or the host has no core to spare for it: it runs only where
   * {@code 2 x ranksHere <= cores}, the rule of the TCP poll read, because on a 2-core VM with
   * two spinning ranks a warm-up thread took the cores the ranks and C2 needed and moved the
   * first sizes' stall instead of ending it (4-16 B at 42-58 us medians against 1.0-1.4,
   * 2026-12-05, docs/BENCHMARKS.md). Returns at once.
   *
   * @param ranksHere the ranks that share this host, simulated nodes included
   */
  public static void start(int ranksHere) {
    if (!STARTED.compareAndSet(false, true)) {
      return;
    }
    String off = whyOff(ranksHere, Runtime.getRuntime().availableProcessors());
    if (off != null) {
      report = "off (" + off + ")";
      DONE.countDown();
      return;
    }
    Thread t = new Thread(KernelWarmUp::run, THREAD);
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    t.start();
  }

  /** Why the warm-up does not run here, or null when it does. */
  private static String whyOff(int ranksHere, int cores) {
    if (!Tuning.WARM_UP_KERNELS.getBoolean()) {
      return "-D" + Tuning.WARM_UP_KERNELS.key() + "=false";
    }
    if (!Reducer.vectorAvailable()) {
      return "no Vector API in this JVM";
    }
    if (2L * ranksHere > cores) {
      return ranksHere + " ranks on " + cores + " cores leave none to spare";
    }
    return null;
  }

  /**
   * Waits up to {@code timeout} for the warm-up; true when it has ended (or never started). An
   * interrupt ends the wait (the interrupt stays set) and returns false: the kernels then warm
   * on, in the background.
   */
  public static boolean await(Duration timeout) {
    try {
      return !STARTED.get() || DONE.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * What the warm-up did: its rounds and time (every kind runs each round), and each kind, marked
   * where it did not reach compiled speed.
   */
  public static String report() {
    return report;
  }

  private static void run() {
    try {
      Reducer r = Reducer.create();
      Kind[] kinds = {new Kind(DataType.F32, ReduceOp.SUM, 2), new Kind(DataType.F32,
          ReduceOp.AVG, 2), new Kind(DataType.BF16, ReduceOp.SUM, 2), new Kind(DataType.BF16,
          ReduceOp.AVG, 2), new Kind(DataType.BF16, ReduceOp.SUM, 4), new Kind(DataType.F64,
          ReduceOp.SUM, 2), new Kind(DataType.F32, ReduceOp.SUM, 8), new Kind(DataType.BF16,
          ReduceOp.AVG, 8)};
      // every kind in each round, as a rank mixes them: C2 then compiles each kernel from a
      // profile of mixed calls (one kernel warmed alone, then the next, left bf16's two-input
      // sum boxing in 3 of 3 JVMs on JDK 17.0.15)
      long start = System.nanoTime();
      long giveUp = start + BUDGET.toNanos();
      int rounds = 0;
      boolean allFast;
      do {
        allFast = true;
        for (Kind k : kinds) {
          allFast &= k.round(r);
        }
        rounds++;
      } while (!allFast && System.nanoTime() - giveUp < 0);
      StringBuilder b = new StringBuilder();
      for (Kind k : kinds) {
        b.append(b.length() > 0 ? "; " : "").append(k);
      }
      report = String.format(java.util.Locale.ROOT, "%d rounds, %.0f ms: %s", rounds,
          (System.nanoTime() - start) / 1e6, b);
    } catch (RuntimeException | Error e) {
      report = "failed: " + e; // the kernels still work; they just warm on first use
    } finally {
      DONE.countDown();
    }
  }

  /** One kernel's buffers and its count of fast rounds in a row. */
  private static final class Kind {
    final DataType type;
    final ReduceOp op;
    final int n;
    final ByteBuffer[] in;
    final long[] offsets;
    final ByteBuffer out;
    final long elements;
    int fast;

    Kind(DataType type, ReduceOp op, int n) {
      this.type = type;
      this.op = op;
      this.n = n;
      int longest = 0;
      long sum = 0;
      for (int len : LENGTHS) {
        longest = Math.max(longest, len);
        sum += len;
      }
      this.elements = sum;
      this.in = new ByteBuffer[n];
      this.offsets = new long[n];
      for (int k = 0; k < n; k++) {
        in[k] = ByteBuffer.allocateDirect(longest * type.size()).order(ByteOrder.nativeOrder());
        for (int i = 0; i < longest; i++) {
          type.put(in[k], i, 1 + (i + k) % 7); // finite, exact in every type
        }
      }
      this.out = ByteBuffer.allocateDirect(longest * type.size()).order(ByteOrder.nativeOrder());
    }

    /**
     * Every length once; true once {@link #ROUNDS_FAST} rounds in a row ran compiled. A kind
     * that is fast runs on with the others: kinds share kernels (the n-input sums share their
     * first and last passes), and a kernel deoptimised by another kind's calls (a failed
     * profile predicate) and not yet compiled again would otherwise be left to a rank's first
     * calls, boxing (bf16 SUM x4 after the eight-input kinds, 3 of 3 JVMs on JDK 17.0.15).
     */
    boolean round(Reducer r) {
      long t0 = System.nanoTime();
      for (int len : LENGTHS) {
        if (n == 2) {
          r.reduce2(type, op, in[0], 0, in[1], 0, out, 0, len, true, 2);
        } else {
          r.reduce(type, op, in, offsets, n, out, 0, len, true, n);
        }
      }
      fast = System.nanoTime() - t0 < FAST_NANOS_PER_ELEMENT * elements ? fast + 1 : 0;
      return fast >= ROUNDS_FAST;
    }

    @Override
    public String toString() {
      return type.name().toLowerCase(java.util.Locale.ROOT) + " " + op + " x" + n
          + (fast >= ROUNDS_FAST ? "" : " (not yet compiled)");
    }
  }
}

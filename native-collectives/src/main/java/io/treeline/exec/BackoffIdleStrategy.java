package io.treeline.exec;

import java.util.concurrent.locks.LockSupport;

/**
 * How a waiting rank burns time, after Agrona's {@code BackoffIdleStrategy}: spin with
 * {@link Thread#onSpinWait()} first (a peer on another core usually answers within
 * microseconds), then yield the core, then park with exponentially growing sleeps up to
 * {@code maxParkNanos}. {@link #reset()} after every successful poll. Not thread-safe: one per
 * waiting thread.
 *
 * <p>The spin phase is a time budget, not a count (a PAUSE takes 10 to 140 cycles depending on
 * the CPU). Its length is the trade-off of issue 15: a yield on a machine whose cores are busy
 * with other work gives the core away for a scheduler slice (milliseconds), so a wait that
 * yields after a few microseconds loses the peer's signal for that long, while a long spin when
 * ranks outnumber cores takes the core the peer needs. {@link #forWaiters} picks by that.
 */
public final class BackoffIdleStrategy {
  /** Spin budget when every waiter can have its own core: a peer's answer comes in time. */
  public static final long LONG_SPIN_NANOS = 50_000;
  /** Spin budget when waiters outnumber cores: yield soon, the peer needs this core. */
  public static final long SHORT_SPIN_NANOS = 2_000;

  private final long maxSpinNanos;
  private final long minSpinNanos;
  private long spinNanos;
  private final long maxYields;
  private final long minParkNanos;
  private final long maxParkNanos;
  private long spins;
  private long spinStart;
  private boolean spinning;
  private long yields;
  private long parkNanos;

  public BackoffIdleStrategy(long spinNanos, long maxYields, long minParkNanos,
      long maxParkNanos) {
    this.maxSpinNanos = spinNanos;
    this.minSpinNanos = Math.min(spinNanos, SHORT_SPIN_NANOS);
    this.spinNanos = spinNanos;
    this.maxYields = maxYields;
    this.minParkNanos = minParkNanos;
    this.maxParkNanos = maxParkNanos;
    reset();
  }

  /** 2 us of spinning, then 10k yields (ranks often outnumber cores), then parks 1-100 us. */
  public static BackoffIdleStrategy defaults() {
    return new BackoffIdleStrategy(SHORT_SPIN_NANOS, 10_000, 1_000, 100_000);
  }

  /**
   * For one of {@code waiters} threads of this machine that wait on each other (the local ranks
   * of a node): a 50 us spin when they fit the cores, else the {@link #defaults()}.
   */
  public static BackoffIdleStrategy forWaiters(int waiters) {
    boolean fits = waiters <= Runtime.getRuntime().availableProcessors();
    return new BackoffIdleStrategy(fits ? LONG_SPIN_NANOS : SHORT_SPIN_NANOS, 10_000, 1_000,
        100_000);
  }

  /** The spin budget the next wait starts with. */
  long spinNanos() {
    return spinNanos;
  }

  public void idle() {
    if (spinning) {
      if (spins++ == 0) {
        spinStart = System.nanoTime();
      }
      Thread.onSpinWait();
      // the clock every 8 spins: a PAUSE takes up to ~50 ns, so the budget is kept to ~0.4 us
      // (every 64, the old rule, spun at least 128 PAUSEs, ~6 us, before a first look: longer
      // than the 2 us budget of ranks that outnumber the cores, whose peers need this core)
      if ((spins & 7) == 0 && System.nanoTime() - spinStart > spinNanos) {
        spinning = false;
      }
    } else if (yields < maxYields) {
      yields++;
      Thread.yield();
    } else {
      LockSupport.parkNanos(parkNanos);
      parkNanos = Math.min(parkNanos << 1, maxParkNanos);
    }
  }

  /**
   * After a successful poll. The spin budget adapts between {@code SHORT_SPIN_NANOS} and the
   * configured one: a wait that ended within the configured budget (in the spin, or in the
   * yields soon after it) doubles it, since a longer spin would have caught the peer; one that
   * outlasted the whole budget halves it. The ranks may fit the cores and still not have them
   * (other processes on a busy machine): then two ranks share a core, the peer answers only
   * after a scheduler slice, and every hand-off would first burn a whole spin budget of the
   * core the peer needs.
   *
   * <p>The earlier rule halved on any wait that reached a yield. Two ranks then settled at the
   * floor together: each wait a little longer than 2 us, so each ended in the yields, so the
   * budget stayed at 2 us, and a 16-byte allreduce on 2 ranks took 8.4-9.3 us instead of 0.5
   * for a whole sweep size in 4 of 8 runs (this 2-core VM, 2026-12-04; 0 of 8 with this rule,
   * BENCHMARKS.md).
   */
  public void reset() {
    if (spins > 0) { // a wait ended (not the constructor, not a reset without waiting)
      boolean caught = spinning || System.nanoTime() - spinStart < maxSpinNanos;
      spinNanos = caught ? Math.min(maxSpinNanos, spinNanos * 2)
          : Math.max(minSpinNanos, spinNanos / 2);
    }
    spinning = true;
    spins = 0;
    yields = 0;
    parkNanos = minParkNanos;
  }
}

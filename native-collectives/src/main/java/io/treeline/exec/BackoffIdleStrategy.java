package io.treeline.exec;

import java.util.concurrent.locks.LockSupport;

/**
 * How a waiting rank burns time, after Agrona's {@code BackoffIdleStrategy}: spin with
 * {@link Thread#onSpinWait()} first (a peer on another core usually answers within
 * microseconds), then yield the core, then park with exponentially growing sleeps up to
 * {@code maxParkNanos}. {@link #reset()} after every successful poll. Not thread-safe: one per
 * waiting thread.
 */
public final class BackoffIdleStrategy {
  private final long maxSpins;
  private final long maxYields;
  private final long minParkNanos;
  private final long maxParkNanos;
  private long spins;
  private long yields;
  private long parkNanos;

  public BackoffIdleStrategy(long maxSpins, long maxYields, long minParkNanos,
      long maxParkNanos) {
    this.maxSpins = maxSpins;
    this.maxYields = maxYields;
    this.minParkNanos = minParkNanos;
    this.maxParkNanos = maxParkNanos;
    reset();
  }

  /** 100 spins, then 10k yields (ranks often outnumber cores), then parks from 1 us to 100 us. */
  public static BackoffIdleStrategy defaults() {
    return new BackoffIdleStrategy(100, 10_000, 1_000, 100_000);
  }

  public void idle() {
    if (spins < maxSpins) {
      spins++;
      Thread.onSpinWait();
    } else if (yields < maxYields) {
      yields++;
      Thread.yield();
    } else {
      LockSupport.parkNanos(parkNanos);
      parkNanos = Math.min(parkNanos << 1, maxParkNanos);
    }
  }

  public void reset() {
    spins = 0;
    yields = 0;
    parkNanos = minParkNanos;
  }
}

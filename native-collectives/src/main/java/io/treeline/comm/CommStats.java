package io.treeline.comm;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Process-wide counters of the collectives run by every communicator of this JVM, per
 * algorithm: calls, bytes and nanoseconds. The Spark plugin publishes them as metrics.
 */
public final class CommStats {
  /** One algorithm's counters. */
  public static final class Counters {
    private final LongAdder calls = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder nanos = new LongAdder();

    public long calls() {
      return calls.sum();
    }

    public long bytes() {
      return bytes.sum();
    }

    public long nanos() {
      return nanos.sum();
    }
  }

  private static final ConcurrentHashMap<String, Counters> BY_ALGORITHM =
      new ConcurrentHashMap<>();
  private static final LongAdder FAILURES = new LongAdder();

  private CommStats() {
  }

  static void record(String algorithm, long bytes, long nanos) {
    Counters c = BY_ALGORITHM.computeIfAbsent(algorithm, k -> new Counters());
    c.calls.increment();
    c.bytes.add(bytes);
    c.nanos.add(nanos);
  }

  static void failed() {
    FAILURES.increment();
  }

  /** The counters of {@code algorithm}, created empty if it has not run yet. */
  public static Counters of(String algorithm) {
    return BY_ALGORITHM.computeIfAbsent(algorithm, k -> new Counters());
  }

  public static long failures() {
    return FAILURES.sum();
  }

  public static Map<String, Counters> snapshot() {
    return new TreeMap<>(BY_ALGORITHM);
  }
}

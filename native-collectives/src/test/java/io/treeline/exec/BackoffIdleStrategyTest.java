package io.treeline.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The spin budget adapts: halved by waits that had to yield, doubled by waits the spin ended. */
class BackoffIdleStrategyTest {
  /** Idles past the spin budget: the wait ends after yielding. */
  private static void waitPastTheSpin(BackoffIdleStrategy s) {
    long end = System.nanoTime() + s.spinNanos() + 200_000;
    while (System.nanoTime() - end < 0) {
      s.idle();
    }
    s.reset();
  }

  @Test
  void waitsThatYieldShortenTheSpinAndWaitsTheSpinEndsLengthenIt() {
    BackoffIdleStrategy s = new BackoffIdleStrategy(50_000, 1_000_000, 1_000, 100_000);
    assertEquals(50_000, s.spinNanos());
    s.reset(); // no wait: no change
    assertEquals(50_000, s.spinNanos());
    waitPastTheSpin(s);
    assertEquals(25_000, s.spinNanos());
    for (int i = 0; i < 10; i++) {
      waitPastTheSpin(s);
    }
    assertEquals(BackoffIdleStrategy.SHORT_SPIN_NANOS, s.spinNanos()); // the floor
    s.idle(); // one spin, then the flag came
    s.reset();
    assertEquals(2 * BackoffIdleStrategy.SHORT_SPIN_NANOS, s.spinNanos());
    for (int i = 0; i < 10; i++) {
      s.idle();
      s.reset();
    }
    assertEquals(50_000, s.spinNanos()); // the configured budget is the ceiling
  }
}

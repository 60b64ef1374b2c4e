package io.treeline.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntConsumer;

/** Runs one body per rank on its own thread, as separate processes would run, and joins. */
public final class Ranks {
  private Ranks() {
  }

  /** Returns each rank's failure (null where it succeeded). */
  public static List<Throwable> runAll(int n, long timeoutMillis, IntConsumer body) {
    AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(n);
    List<Thread> threads = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      int rank = r;
      Thread t = new Thread(() -> {
        try {
          body.accept(rank);
        } catch (Throwable e) {
          errors.set(rank, e);
        }
      }, "rank-" + r);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    long deadline = System.currentTimeMillis() + timeoutMillis;
    for (Thread t : threads) {
      try {
        t.join(Math.max(1, deadline - System.currentTimeMillis()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
      if (t.isAlive()) {
        throw new AssertionError(t.getName() + " still running after " + timeoutMillis + " ms");
      }
    }
    List<Throwable> out = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      out.add(errors.get(r));
    }
    return out;
  }

  /** Runs and rethrows the first failure. */
  public static void run(int n, long timeoutMillis, IntConsumer body) {
    List<Throwable> errors = runAll(n, timeoutMillis, body);
    AssertionError first = null;
    for (int r = 0; r < n; r++) {
      if (errors.get(r) != null) {
        AssertionError e = new AssertionError("rank " + r + " failed: " + errors.get(r),
            errors.get(r));
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}

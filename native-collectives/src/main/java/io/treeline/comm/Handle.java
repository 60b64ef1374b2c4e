package io.treeline.comm;

import io.treeline.exec.CollectiveException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** An asynchronous collective in flight; {@link #await} waits for it, never without a bound. */
public final class Handle {
  private final Future<?> future;
  private final int rank;
  private final String what;

  Handle(Future<?> future, int rank, String what) {
    this.future = future;
    this.rank = rank;
    this.what = what;
  }

  public boolean isDone() {
    return future.isDone();
  }

  /** Wait until the collective completes; rethrows its failure. */
  public void await(Duration timeout) {
    try {
      future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      // a process resumed after a stop finds every timer expired at once: give the collective
      // a moment to fail with its own cause (a peer's abort) rather than this bare timeout
      try {
        future.get(1, TimeUnit.SECONDS);
        return;
      } catch (ExecutionException failed) {
        rethrow(failed);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      } catch (TimeoutException still) {
        // it is stuck indeed
      }
      throw CollectiveException.timeout(rank, -1, what, "the asynchronous collective to "
          + "complete", timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CollectiveException(rank, -1, what, "interrupted while waiting", e);
    } catch (ExecutionException e) {
      rethrow(e);
    }
  }

  private void rethrow(ExecutionException e) {
    Throwable c = e.getCause();
    if (c instanceof RuntimeException r) {
      throw r;
    }
    throw new CollectiveException(rank, -1, what, c.toString(), c);
  }
}

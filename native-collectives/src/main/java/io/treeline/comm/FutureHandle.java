package io.treeline.comm;

import io.treeline.core.CollectiveException;
import io.treeline.core.Handle;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A collective submitted to the communicator's thread; {@link #await} waits, never unbounded. */
final class FutureHandle implements Handle {
  private final Future<?> future;
  private final int rank;
  private final String what;
  private final Duration bound;

  FutureHandle(Future<?> future, int rank, String what, Duration bound) {
    this.future = future;
    this.rank = rank;
    this.what = what;
    this.bound = bound;
  }

  @Override
  public boolean isDone() {
    return future.isDone();
  }

  @Override
  public void await() {
    await(bound);
  }

  @Override
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

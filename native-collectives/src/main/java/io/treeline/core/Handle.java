package io.treeline.core;

import java.time.Duration;

/**
 * An asynchronous collective in flight, as the {@code *Async} methods of {@link Communicator}
 * return it. Until it is done the call may still read its input and write its output: leave
 * both alone until {@link #await} returns. Every wait is bounded.
 */
public interface Handle {
  /**
   * Whether the collective has finished, successfully or not; never blocks.
   *
   * @return true once {@link #await} would return or throw at once
   */
  boolean isDone();

  /**
   * Waits until the collective completes, at most the call's own bound (the communicator's
   * {@linkplain Communicator#timeout() timeout} for each window the message needs).
   *
   * @throws CollectiveException when the collective failed or did not finish in time
   */
  void await();

  /**
   * Waits until the collective completes, at most {@code timeout}. Once it returns, the output
   * holds the result and the input may be reused (the call's writes happen-before the return).
   *
   * @param timeout the longest wait
   * @throws CollectiveException when the collective failed (its cause, naming rank, peer and
   *     phase) or did not finish within {@code timeout}
   */
  void await(Duration timeout);
}

package io.treeline.bootstrap;

import java.time.Duration;

/**
 * How the ranks of a job find each other before any collective can run: the rank, the world
 * size, an all-gather of small byte strings and a barrier, each bounded by a timeout.
 * Implementations: {@link TcpStoreBootstrap} for plain processes (torchrun style), the
 * {@code BarrierTaskContext} bridge in barrier-exec for Spark.
 */
public interface Bootstrap extends AutoCloseable {
  int rank();

  int size();

  /** Every rank's {@code mine}, indexed by rank; the same on every rank. */
  byte[][] allGather(byte[] mine, Duration timeout);

  default void barrier(Duration timeout) {
    allGather(new byte[0], timeout);
  }

  /** The secret every connection between this job's ranks proves before it carries data. */
  byte[] secret();

  @Override
  void close();
}

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

  /**
   * Which machine this rank is on: ranks with the same node id share memory. Defaults to
   * {@link NodeIdentity#local()}; a bridge may place ranks on simulated nodes.
   */
  default String nodeId() {
    return NodeIdentity.local();
  }

  /** The secret every connection between this job's ranks proves before it carries data. */
  byte[] secret();

  @Override
  void close();
}

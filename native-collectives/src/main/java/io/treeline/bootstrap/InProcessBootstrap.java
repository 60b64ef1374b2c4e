package io.treeline.bootstrap;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Ranks that are threads of one JVM: an all-gather through a shared array between two barrier
 * rounds. With in-process transports it runs the one {@code HostCommunicator} over threads, for
 * tests that need many ranks cheaply and for the thread mode of the benchmark. A rank that
 * {@link #close}s before the others arrive breaks the barrier, so they fail at once.
 */
public final class InProcessBootstrap implements Bootstrap {
  private final Group group;
  private final int rank;
  private volatile boolean closed;

  private InProcessBootstrap(Group group, int rank) {
    this.group = group;
    this.rank = rank;
  }

  /** One bootstrap per rank; rank r is on node {@code nodeIds[r]}. */
  public static InProcessBootstrap[] group(String... nodeIds) {
    Group g = new Group(nodeIds);
    InProcessBootstrap[] all = new InProcessBootstrap[nodeIds.length];
    for (int r = 0; r < all.length; r++) {
      all[r] = new InProcessBootstrap(g, r);
    }
    return all;
  }

  /** {@code nodes} simulated nodes of {@code perNode[i]} ranks, node-major. */
  public static InProcessBootstrap[] nodes(int... perNode) {
    int n = 0;
    for (int k : perNode) {
      n += k;
    }
    String[] ids = new String[n];
    int r = 0;
    for (int node = 0; node < perNode.length; node++) {
      for (int k = 0; k < perNode[node]; k++) {
        ids[r++] = "inprocess-node-" + node;
      }
    }
    return group(ids);
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return group.nodeIds.length;
  }

  @Override
  public String nodeId() {
    return group.nodeIds[rank];
  }

  @Override
  public byte[] secret() {
    return group.secret.clone();
  }

  @Override
  public byte[][] allGather(byte[] mine, Duration timeout) {
    if (closed) {
      throw new BootstrapException("rank " + rank + ": the in-process bootstrap is closed");
    }
    group.slots[rank] = mine.clone();
    await(timeout, "all-gather");
    byte[][] all = new byte[size()][];
    for (int r = 0; r < all.length; r++) {
      all[r] = group.slots[r].clone();
    }
    await(timeout, "all-gather (read)"); // nobody overwrites a slot before all have read
    return all;
  }

  private void await(Duration timeout, String phase) {
    try {
      group.barrier.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      group.barrier.reset();
      throw new BootstrapException("rank " + rank + ": " + phase + " timed out after "
          + timeout.toMillis() + " ms waiting for the other in-process ranks");
    } catch (BrokenBarrierException e) {
      throw new BootstrapException("rank " + rank + ": " + phase + " failed: another "
          + "in-process rank timed out or left");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BootstrapException("rank " + rank + ": interrupted in " + phase);
    }
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      if (group.barrier.getNumberWaiting() > 0) {
        group.barrier.reset(); // peers waiting for this rank fail now
      }
    }
  }

  private static final class Group {
    final String[] nodeIds;
    final byte[][] slots;
    final CyclicBarrier barrier;
    final byte[] secret = new byte[32];

    Group(String[] nodeIds) {
      this.nodeIds = nodeIds.clone();
      this.slots = new byte[nodeIds.length][];
      this.barrier = new CyclicBarrier(nodeIds.length);
      new SecureRandom().nextBytes(secret);
    }
  }
}

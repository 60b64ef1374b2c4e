package io.treeline.transport;

import io.treeline.exec.PeerWatch;
import io.treeline.plan.Topology;
import java.io.IOException;
import java.time.Duration;

/**
 * How a communicator gets a transport without knowing what it is, in the two steps every
 * transport needs (as Gloo's pairs do): {@link #open} makes this rank's local resources and an
 * address for its peers (a listening port, a segment's name, IPC handles); the communicator
 * all-gathers the addresses through its bootstrap, agrees on the topology, and {@link
 * Pending#connect}s. Setup is collective: every rank opens and connects the same providers.
 *
 * @param <T> {@link HostPeerMemory}, {@link DevicePeerMemory} or {@link NetworkLink}
 */
public interface TransportProvider<T extends AutoCloseable> {
  /** What a rank knows before it has heard from its peers. */
  record Local(int rank, int size, byte[] secret, Duration timeout) {
  }

  /**
   * What the ranks agreed at setup, in plan order: this rank's plan rank, the topology, every
   * rank's address and process id by plan rank, and a barrier over all ranks (a transport that
   * must know its peers mapped its memory before it unlinks a name uses it), and the rank's
   * {@link PeerWatch}, shared by all of its transports: each reports failures it hears of into
   * it and polls it in every wait, so that an abort on one transport ends waits on the others.
   */
  record Peers(Topology topology, int planRank, byte[][] addresses, long[] pids,
      Runnable barrier, Duration timeout, PeerWatch watch) {
    /** Peers with a watch of their own (a transport used alone). */
    public Peers(Topology topology, int planRank, byte[][] addresses, long[] pids,
        Runnable barrier, Duration timeout) {
      this(topology, planRank, addresses, pids, barrier, timeout, new PeerWatch(planRank,
          timeout));
    }
  }

  /** Open this rank's side. */
  Pending<T> open(Local local) throws IOException;

  /** A transport opened but not yet connected; closing it releases what {@code open} made. */
  interface Pending<T> extends AutoCloseable {
    /** Published to every rank through the bootstrap. */
    byte[] address();

    /** Connect to the peers; the pending transport belongs to the result from here on. */
    T connect(Peers peers) throws IOException;

    @Override
    void close();
  }
}

package io.treeline.exec;

import java.nio.ByteBuffer;

/**
 * Byte messages between ranks, on numbered lanes: independent FIFOs per ordered rank pair. TCP
 * implements it ({@code transport.tcp}), and channels between threads ({@code
 * transport.inprocess}); it is the seam where a UCX or RDMA transport plugs in. Peers are named by plan rank and may sit on any node.
 *
 * <h2>Ordering and buffers</h2>
 * Messages on one (sender, receiver, lane) arrive in the order sent. {@link #send} returns once
 * {@code src} may be reused (the bytes are copied or on the wire). {@link #receive} returns a
 * buffer whose bytes [0, bytes) hold the next message, valid until {@link #release}, which hands
 * its slot back to the sender (credit-based flow control: a sender blocks, up to its deadline,
 * while the receiver holds all of its slots). One thread per rank calls these methods.
 *
 * <h2>Deadlines and failure</h2>
 * Every blocking call ends at its absolute deadline ({@link System#nanoTime()} based) with a
 * {@code CollectiveException} naming rank, peer, phase and the timeout, and at once when the peer
 * aborted, its connection broke, or this link was closed. Messages carry the call's sequence and
 * descriptor ({@link #beginCall}); a message from a peer in the same call with a different
 * descriptor fails with {@code CallMismatchException}.
 */
public interface NetworkLink extends AutoCloseable {
  /** The collective this rank is entering; stamped on its messages and checked on receipt. */
  void beginCall(long sequence, CallDescriptor call);

  void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
      String phase);

  ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase);

  /** Hand the slot of the last {@link #receive} from {@code peer} on {@code lane} back. */
  void release(int peer, int lane, long deadline, String phase);

  /**
   * Write what this link has put off (the credits of small messages, which ride with this
   * rank's next frame to the peer): the runners call it before the rank waits on anything but
   * this link (a local peer's flag, the GPU), so no peer waits for a credit while this rank
   * waits for something else. A link's own waits flush by themselves. Allocates nothing.
   */
  default void flush(long deadline, String phase) {
  }

  /** Tell every peer this rank has a connection to that it failed. */
  void abort(String reason);

  /**
   * Tell every peer that this rank leaves in order after its last call (its communicator
   * closed), so that a peer waiting for a later call from it fails at once.
   */
  default void leave(String reason) {
    abort(reason);
  }

  /**
   * The group's hang report for a collective that timed out: every rank's call, phase and the
   * peer it waits on, gathered within {@code budget}; null when this link cannot ask.
   */
  default String describeWaits(java.time.Duration budget) {
    return null;
  }

  /**
   * The ranks of the group on this rank's host, simulated nodes included, as far as this link
   * can tell (TCP: the ranks that share this rank's address); 0 when it cannot.
   */
  default int ranksOnThisHost() {
    return 0;
  }

  /** Connections refused at this rank for a wrong secret or a bad frame. */
  default int refusedConnections() {
    return 0;
  }

  /** Closes every connection and thread; wakes a rank blocked in a call. Safe twice. */
  @Override
  void close();
}

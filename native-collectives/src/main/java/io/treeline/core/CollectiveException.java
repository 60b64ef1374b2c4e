package io.treeline.core;

import java.time.Duration;

/**
 * A collective that did not complete. The message always names the rank that saw the failure,
 * the peer it was dealing with (or -1), the phase (the step or call), and the timeout in force,
 * and says what the user can change.
 */
public class CollectiveException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The rank that saw the failure. */
  private final int rank;
  /** The peer involved, or -1. */
  private final int peer;
  /** The step or call in progress. */
  private final String phase;

  /**
   * A failure seen by {@code rank} while dealing with {@code peer} in {@code phase}.
   *
   * @param rank the rank that saw the failure
   * @param peer the peer it was waiting for or talking to, or -1
   * @param phase the step or call (an algorithm and step, or a call such as "allreduce")
   * @param message what happened and what the user can change
   * @param cause the underlying exception, or null
   */
  public CollectiveException(int rank, int peer, String phase, String message, Throwable cause) {
    super("rank " + rank + (peer >= 0 ? ", peer " + peer : "") + ", " + phase + ": " + message,
        cause);
    this.rank = rank;
    this.peer = peer;
    this.phase = phase;
  }

  /**
   * A wait that ran out of time.
   *
   * @param rank the rank that waited
   * @param peer the peer it waited for, or -1
   * @param phase the step or call
   * @param waitingFor what it waited for
   * @param timeout the bound that passed
   * @return the exception ({@link CollectiveTimeoutException}), whose message names the timeout
   *     and suggests raising it
   */
  public static CollectiveTimeoutException timeout(int rank, int peer, String phase,
      String waitingFor, Duration timeout) {
    return new CollectiveTimeoutException(rank, peer, phase, "timed out after " + human(timeout)
        + " waiting for " + waitingFor + "; the peer may have failed or be making a different "
        + "collective call (raise the timeout if it is only slow)", null);
  }

  /**
   * Another rank of the group failed: this rank stops waiting at once instead of at its
   * timeout, and says so.
   *
   * @param rank the rank that was waiting
   * @param failedPeer the rank that failed, or -1 when unknown
   * @param phase the step or call
   * @param why what the failed rank, or the transport that noticed, said
   * @param timeout the bound this rank did not have to wait out
   * @return the exception
   */
  public static CollectiveException peerFailed(int rank, int failedPeer, String phase,
      String why, Duration timeout) {
    return new CollectiveException(rank, failedPeer, phase, why + " (so this rank stopped "
        + "waiting at once instead of at its timeout of " + human(timeout) + ")", null);
  }

  /**
   * The rank that saw the failure.
   *
   * @return the rank: inside a collective's steps its {@link Communicator#topologyRank()},
   *     which is {@link Communicator#rank()} whenever ranks are numbered node-major
   */
  public int rank() {
    return rank;
  }

  /**
   * The peer involved.
   *
   * @return the peer's rank, or -1 when the failure concerns no single peer
   */
  public int peer() {
    return peer;
  }

  /**
   * Where it failed.
   *
   * @return the step or call in progress
   */
  public String phase() {
    return phase;
  }

  static String human(Duration d) {
    long ms = d.toMillis();
    return ms % 1000 == 0 ? (ms / 1000) + " s" : ms + " ms";
  }
}

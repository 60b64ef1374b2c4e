package io.treeline.exec;

import java.time.Duration;

/**
 * A collective that did not complete. The message always names the rank that saw the failure,
 * the peer it was dealing with (or -1), the phase (the step or call), and the timeout in force,
 * and says what the user can change.
 */
public class CollectiveException extends RuntimeException {
  private final int rank;
  private final int peer;
  private final String phase;

  public CollectiveException(int rank, int peer, String phase, String message, Throwable cause) {
    super("rank " + rank + (peer >= 0 ? ", peer " + peer : "") + ", " + phase + ": " + message,
        cause);
    this.rank = rank;
    this.peer = peer;
    this.phase = phase;
  }

  /** A wait that reached its deadline: {@link CollectiveTimeoutException}. */
  public static CollectiveTimeoutException timeout(int rank, int peer, String phase,
      String waitingFor, Duration timeout) {
    return new CollectiveTimeoutException(rank, peer, phase, "timed out after " + human(timeout)
        + " waiting for " + waitingFor + "; the peer may have failed or be making a different "
        + "collective call (raise the timeout if it is only slow)", null);
  }

  /**
   * Another rank of the group failed ({@code failedPeer}, -1 when unknown): this rank stops
   * waiting at once instead of at its timeout, and says so.
   */
  public static CollectiveException peerFailed(int rank, int failedPeer, String phase,
      String why, Duration timeout) {
    return new CollectiveException(rank, failedPeer, phase, why + " (so this rank stopped "
        + "waiting at once instead of at its timeout of " + human(timeout) + ")", null);
  }

  public int rank() {
    return rank;
  }

  public int peer() {
    return peer;
  }

  public String phase() {
    return phase;
  }

  static String human(Duration d) {
    long ms = d.toMillis();
    return ms % 1000 == 0 ? (ms / 1000) + " s" : ms + " ms";
  }
}

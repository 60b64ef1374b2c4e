package io.treeline.comm;

import io.treeline.core.CollectiveException;
import java.util.function.Consumer;

/**
 * The life of a communicator as its calls see it, shared by the host and the GPU communicator:
 * open, broken by a first failure (its peers told at once through every transport; every later
 * call fails naming that cause), closed. The messages are the ones a user reads, the same for
 * both kinds.
 */
public final class CallState {
  private static final System.Logger LOG = System.getLogger("io.treeline.comm");

  private final int errorRank;
  private final int rank;
  private final String kind;
  private final Consumer<String> tellPeers;
  private volatile Throwable broken;
  private volatile boolean closed;

  /**
   * @param errorRank the rank that this communicator's exceptions name
   * @param rank the bootstrap rank, as the peers are told and the log names it
   * @param kind what failed, for the log ("collective", "GPU collective")
   * @param tellPeers aborts the transports with the reason (the first failure only)
   */
  public CallState(int errorRank, int rank, String kind, Consumer<String> tellPeers) {
    this.errorRank = errorRank;
    this.rank = rank;
    this.kind = kind;
    this.tellPeers = tellPeers;
  }

  /** Throws when the communicator is closed. */
  public void requireOpen(String what) {
    if (closed) {
      throw new CollectiveException(errorRank, -1, what, "the communicator is closed", null);
    }
  }

  /** Throws, naming the first cause, when an earlier collective failed. */
  public void requireHealthy(String what) {
    Throwable b = broken;
    if (b != null) {
      throw new CollectiveException(errorRank, -1, what, "the communicator failed earlier and "
          + "cannot run more collectives: " + b.getMessage(), b);
    }
  }

  /** {@link #requireOpen} and {@link #requireHealthy}. */
  public void check(String what) {
    requireOpen(what);
    requireHealthy(what);
  }

  /**
   * Marks the communicator broken by {@code e} and tells the peers, the first time only.
   *
   * @return whether this was the first failure
   */
  public boolean fail(Throwable e) {
    if (broken != null) {
      return false;
    }
    broken = e;
    tellPeers.accept("rank " + rank + " failed: " + e.getMessage());
    LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": " + kind + " failed, telling the "
        + "peers: " + e.getMessage());
    return true;
  }

  /** The first failure, or null. */
  public Throwable broken() {
    return broken;
  }

  public boolean closed() {
    return closed;
  }

  /**
   * Marks the communicator closed.
   *
   * @return false when it was closed already (close is idempotent)
   */
  public boolean close() {
    if (closed) {
      return false;
    }
    closed = true;
    return true;
  }
}

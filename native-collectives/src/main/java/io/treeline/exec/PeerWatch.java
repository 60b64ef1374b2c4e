package io.treeline.exec;

import io.treeline.core.CollectiveException;
import java.time.Duration;

/**
 * One rank's view of its group, shared by all of its transports: whether any rank has failed
 * (heard through any transport: a TCP abort frame or a dropped connection, a shared-memory abort
 * word or a dead process), which ranks have left and after which call, and what this rank is
 * doing now (for the hang report, {@link #describe}).
 *
 * <p>Every wait loop of every transport calls {@link #poll} with the time it already read for
 * its deadline: one volatile read per poll, and every {@link #CHECK_INTERVAL_NANOS} the checks
 * the transports registered (a scan of the node's abort words and process ids). So a rank
 * blocked on TCP notices a shared-memory abort, a rank blocked on shared memory notices a TCP
 * one, and a dead process on the node is noticed within the interval, not after 65,536 polls.
 * Nothing here allocates after set-up.
 */
public final class PeerWatch {
  /** How often a waiting rank runs the registered checks. */
  public static final long CHECK_INTERVAL_NANOS = 50_000_000L;

  /** A periodic check, run on the waiting thread; reports through {@link #fail}, {@link #left}. */
  public interface Check {
    void run(PeerWatch watch);
  }

  private final int rank;
  private final Duration timeout;
  private volatile Check[] checks = new Check[0];
  private volatile String failure;
  private volatile int failedPeer = -1;
  private volatile long leftAfter = Long.MAX_VALUE;
  private volatile int leftPeer = -1;
  private long nextCheck = System.nanoTime();
  // what this rank is doing, read by the thread that answers status requests
  private volatile long sequence;
  private volatile boolean inCall;
  private volatile int waitPeer = -1;
  private volatile String waitPhase;
  private volatile String waitWhat;
  private volatile long waitSince;

  /** @param rank this rank, as its transports number it (plan rank) */
  public PeerWatch(int rank, Duration timeout) {
    this.rank = rank;
    this.timeout = timeout;
  }

  public int rank() {
    return rank;
  }

  public Duration timeout() {
    return timeout;
  }

  /** Adds a check that runs every {@link #CHECK_INTERVAL_NANOS} of waiting. Set-up only. */
  public synchronized void addCheck(Check check) {
    Check[] c = java.util.Arrays.copyOf(checks, checks.length + 1);
    c[c.length - 1] = check;
    checks = c;
  }

  /** Rank {@code peer} failed, for {@code why}; the first report wins. */
  public void fail(int peer, String why) {
    if (failure == null) {
      synchronized (this) {
        if (failure == null) {
          failedPeer = peer;
          failure = why;
        }
      }
    }
  }

  /** Rank {@code peer} left the group in order after completing call {@code lastCall}. */
  public synchronized void left(int peer, long lastCall) {
    if (lastCall < leftAfter) {
      leftAfter = lastCall;
      leftPeer = peer;
    }
  }

  /** The first failure heard of, or null. */
  public String failure() {
    return failure;
  }

  /** The rank that failed first (-1 when none did). */
  public int failedPeer() {
    return failedPeer;
  }

  /**
   * From a wait loop at time {@code now}: why this rank's call cannot complete (a rank failed,
   * or left before this call), or null. Runs the checks when they are due.
   */
  public String poll(long now) {
    String f = failure;
    if (f == null && now - nextCheck >= 0) {
      nextCheck = now + CHECK_INTERVAL_NANOS;
      Check[] c = checks;
      for (int i = 0; i < c.length; i++) {
        c[i].run(this);
      }
      f = failure;
    }
    if (f == null && sequence > leftAfter) {
      fail(leftPeer, "rank " + leftPeer + " closed its communicator after call #" + leftAfter
          + " but this rank is in call #" + sequence + ", which needs every rank");
      f = failure;
    }
    return f;
  }

  /** A failure {@link #poll} returned, as an exception naming rank, peer, phase and timeout. */
  public CollectiveException failed(String phase, String why) {
    return CollectiveException.peerFailed(rank, failedPeer, phase, why, timeout);
  }

  // ---- what this rank is doing ------------------------------------------------------------------

  /** Entering call {@code seq}; fails at once if the group is already broken. */
  public void beginCall(long seq, String phase) {
    sequence = seq;
    inCall = true;
    String why = poll(System.nanoTime());
    if (why != null) {
      throw failed(phase + " #" + seq, why);
    }
  }

  public void endCall() {
    inCall = false;
    waitPeer = -1;
  }

  /** This rank began to wait for {@code what} from {@code peer}; constant strings only. */
  public void waiting(int peer, String phase, String what, long now) {
    waitPhase = phase;
    waitWhat = what;
    waitSince = now;
    waitPeer = peer;
  }

  /** The wait that {@link #waiting} began is over. */
  public void waited() {
    waitPeer = -1;
  }

  public long sequence() {
    return sequence;
  }

  /**
   * One line for the hang report: {@code call #5 (ar-hier/network): waiting 30012 ms for rank 3
   * (a message)}, or {@code between calls: last call #4}.
   */
  public String describe(long now) {
    long seq = sequence;
    if (!inCall) {
      return "between calls: last call #" + seq;
    }
    int peer = waitPeer;
    if (peer < 0) {
      return "in call #" + seq + ", not waiting (computing or moving data)";
    }
    return "in call #" + seq + " (" + waitPhase + "): waiting " + (now - waitSince) / 1_000_000
        + " ms for rank " + peer + " (" + waitWhat + ")";
  }

  /** The call this rank is in, or the last it finished (with {@link #inCall()}). */
  public boolean inCall() {
    return inCall;
  }

  public int waitPeer() {
    return waitPeer;
  }
}

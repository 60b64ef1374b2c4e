package io.treeline.transport.shm;

import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import io.treeline.exec.PeerWatch;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waiting for a local peer's flag in its {@link SharedSegment}: acquire reads through the idle
 * strategy until the flag reaches a value, failing at once when the peer aborted, this rank was
 * closed or the peer's process exited, and at the deadline otherwise, with an exception that
 * names rank, peer, phase and timeout. A dead peer process is noticed within
 * {@link PeerWatch#CHECK_INTERVAL_NANOS} of waiting (by elapsed time, not by a count of polls),
 * and every wait polls the rank's {@link PeerWatch}, so a failure heard on another transport
 * ends it too. After the wait, the peer's published call is compared with ours. Shared by the
 * host communicator and the GPU path (whose flags order IPC events).
 */
public final class PeerFlags {
  private final int rank;
  private final SharedSegment[] segments;
  private final ProcessHandle[] processes;
  private final long[] pids;
  private final Duration timeout;
  private final BooleanSupplier closed;
  private final PeerWatch watch;
  private final BackoffIdleStrategy idle;
  /** The peer's call words (count, meta) of one check: no allocation per wait. */
  private final long[] theirs = new long[2];

  /** Flags with a watch of their own (the GPU path: only the awaited peer is checked). */
  public PeerFlags(int rank, SharedSegment[] segments, long[] pids, Duration timeout,
      BooleanSupplier closed) {
    this(rank, segments, pids, timeout, closed, new PeerWatch(rank, timeout));
  }

  /**
   * @param rank this rank (plan numbering), as errors name it
   * @param segments every local peer's segment by plan rank (null elsewhere)
   * @param pids every rank's process id by plan rank
   * @param watch the rank's view of its group: polled in every wait (failures heard by its other
   *     transports end this wait too)
   */
  public PeerFlags(int rank, SharedSegment[] segments, long[] pids, Duration timeout,
      BooleanSupplier closed, PeerWatch watch) {
    this.rank = rank;
    this.segments = segments;
    this.pids = pids;
    this.timeout = timeout;
    this.closed = closed;
    this.watch = watch;
    this.processes = new ProcessHandle[segments.length];
    int local = 0;
    for (int p = 0; p < segments.length; p++) {
      local += segments[p] != null ? 1 : 0;
      if (segments[p] != null && p != rank) {
        processes[p] = ProcessHandle.of(pids[p]).orElse(null); // null: exited already
      }
    }
    this.idle = BackoffIdleStrategy.forWaiters(local); // the node's ranks wait on each other
  }

  /** Whether local {@code peer}'s process is still running (false once it has exited). */
  boolean alive(int peer) {
    ProcessHandle h = processes[peer];
    return h != null && h.isAlive();
  }

  /**
   * Block until local {@code peer}'s flag is at least {@code value} (acquire), then check that
   * the peer's call is {@code call} when it is still in call {@code sequence}.
   */
  public void await(int peer, long value, long deadline, String phase, long sequence,
      CallDescriptor call) {
    SharedSegment s = segments[peer];
    if (s.flag() < value) {
      waitFor(s, peer, value, deadline, phase, sequence);
    }
    // The peer published its call before the signal we acquired. If it is still in our call
    // (same sequence), its call must be ours; if it has moved on, it passed our call's last
    // barrier, so it made our call. readCall's seqlock keeps the peer's publishing of its next
    // call, while we read, from passing for a mismatch.
    if (s.readCall(sequence, theirs) && (theirs[0] != call.count() || theirs[1] != call.meta())) {
      throw new CallMismatchException(rank, peer, phase, sequence, call.describe(), sequence,
          new CallDescriptor(theirs[0], theirs[1]).describe());
    }
  }

  private void waitFor(SharedSegment s, int peer, long value, long deadline, String phase,
      long sequence) {
    long start = System.nanoTime();
    long nextLiveness = start + PeerWatch.CHECK_INTERVAL_NANOS;
    watch.waiting(peer, phase, "its flag", start);
    while (true) {
      // The owner publishes its flag before it may abort (a peer that signalled its last phase
      // and then closed): read the abort first, so that a flag published before it is seen.
      long aborted = s.abortWord();
      if (s.flag() >= value) {
        break;
      }
      if (aborted != 0) {
        throw CollectiveException.peerFailed(rank, peer, phase + " #" + sequence, "local rank "
            + peer + (aborted == SharedSegment.LEFT ? " left: " : " aborted: ")
            + s.abortReason(), timeout);
      }
      if (closed.getAsBoolean()) {
        throw new CollectiveException(rank, peer, phase, "this rank aborted or closed its "
            + "communicator", null);
      }
      long now = System.nanoTime();
      String why = watch.poll(now);
      if (why != null) {
        throw watch.failed(phase + " #" + sequence, why);
      }
      if (now - deadline > 0) {
        throw CollectiveException.timeout(rank, peer, phase + " #" + sequence, "local rank "
            + peer + " to reach flag " + value, timeout);
      }
      if (now - nextLiveness > 0) {
        nextLiveness = now + PeerWatch.CHECK_INTERVAL_NANOS;
        if (!alive(peer) && s.flag() < value) { // it may have signalled, then exited
          throw CollectiveException.peerFailed(rank, peer, phase + " #" + sequence, "local rank "
              + peer + " (pid " + pids[peer] + ") has exited without a goodbye (killed?)",
              timeout);
        }
      }
      idle.idle();
    }
    idle.reset();
    watch.waited();
  }

  /**
   * The check a node's shared memory adds to the rank's watch: any local peer that failed,
   * left, or whose process exited without a word, is reported, whoever this rank waits on.
   */
  public void scan(PeerWatch w) {
    for (int p = 0; p < segments.length; p++) {
      SharedSegment s = segments[p];
      if (s == null || p == rank) {
        continue;
      }
      long word = s.abortWord();
      if (word == SharedSegment.FAILED) {
        w.fail(p, "local rank " + p + " aborted: " + s.abortReason());
        return;
      }
      if (word == SharedSegment.LEFT) {
        w.left(p, s.callSequence());
      } else if (!alive(p)) {
        w.fail(p, "local rank " + p + " (pid " + pids[p] + ") has exited without a goodbye "
            + "(killed?)");
        return;
      }
    }
  }
}

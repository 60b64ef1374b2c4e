package io.treeline.transport.shm;

import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waiting for a local peer's flag in its {@link SharedSegment}: acquire reads through the idle
 * strategy until the flag reaches a value, failing at once when the peer aborted, this rank was
 * closed or the peer's process exited, and at the deadline otherwise, with an exception that
 * names rank, peer, phase and timeout. After the wait, the peer's published call is compared
 * with ours. Shared by the host communicator and the GPU path (whose flags order IPC events).
 */
public final class PeerFlags {
  private final int rank;
  private final SharedSegment[] segments;
  private final long[] pids;
  private final Duration timeout;
  private final BooleanSupplier closed;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();

  /**
   * @param rank this rank (plan numbering), as errors name it
   * @param segments every local peer's segment by plan rank (null elsewhere)
   * @param pids every rank's process id by plan rank
   */
  public PeerFlags(int rank, SharedSegment[] segments, long[] pids, Duration timeout,
      BooleanSupplier closed) {
    this.rank = rank;
    this.segments = segments;
    this.pids = pids;
    this.timeout = timeout;
    this.closed = closed;
  }

  /**
   * Block until local {@code peer}'s flag is at least {@code value} (acquire), then check that
   * the peer's call is {@code call} when it is still in call {@code sequence}.
   */
  public void await(int peer, long value, long deadline, String phase, long sequence,
      CallDescriptor call) {
    SharedSegment s = segments[peer];
    int polls = 0;
    while (true) {
      // The owner publishes its flag before it may abort (a peer that signalled its last phase
      // and then closed): read the abort first, so that a flag published before it is seen.
      boolean aborted = s.aborted();
      if (s.flag() >= value) {
        break;
      }
      if (aborted) {
        throw new CollectiveException(rank, peer, phase, "local rank " + peer + " aborted: "
            + s.abortReason(), null);
      }
      if (closed.getAsBoolean()) {
        throw new CollectiveException(rank, peer, phase, "this rank aborted or closed its communicator", null);
      }
      if (System.nanoTime() - deadline > 0) {
        throw CollectiveException.timeout(rank, peer, phase + " #" + sequence, "local rank "
            + peer + " to reach flag " + value, timeout);
      }
      if ((++polls & 0xFFFF) == 0 && !ProcessHandle.of(pids[peer]).map(ProcessHandle::isAlive)
          .orElse(false) && s.flag() < value) { // it may have signalled, then exited
        throw new CollectiveException(rank, peer, phase, "local rank " + peer + " (pid "
            + pids[peer] + ") has exited", null);
      }
      idle.idle();
    }
    idle.reset();
    // The peer published its call before the signal we acquired. If it is still in our call
    // (same sequence), its call must be ours; if it has moved on, it passed our call's last
    // barrier, so it made our call. Re-reading the sequence guards against the peer publishing
    // its next call while we read.
    long seq = s.callSequence();
    long count = s.callCount();
    long meta = s.callMeta();
    if (seq == sequence && s.callSequence() == seq
        && (count != call.count() || meta != call.meta())) {
      throw new CallMismatchException(rank, peer, phase, sequence, call.describe(), seq,
          new CallDescriptor(count, meta).describe());
    }
  }
}

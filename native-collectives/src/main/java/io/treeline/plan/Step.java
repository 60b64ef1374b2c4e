package io.treeline.plan;

import java.util.Arrays;

/**
 * One step of one rank's schedule. Regions are {@code [offset, offset + count)} in elements and
 * denote the same elements in every rank's buffers. A step that writes always writes the
 * executing rank's {@link Buf#OUTPUT}, except that message steps of staged plans write the
 * rank's {@link Buf#STAGE} (a {@link RecvReduce} whose {@code acc} is STAGE, a {@link RecvCopy}
 * into STAGE) and {@link StageOut} writes STAGE.
 *
 * <p>Message steps ({@link Send}, {@link RecvReduce}, {@link RecvCopy}) move data over the
 * channel {@code (from, to, lane)}, a FIFO in which the receiver must name the same region as
 * the sender. Peer-memory steps ({@link ReduceFrom}, {@link CopyFrom}) read other local ranks'
 * buffers in place; {@link Signal} and {@link Wait} order them.
 *
 * <p>{@code finish} marks the step that produces an element's final value; that is where an
 * AVG divides by the number of ranks.
 */
public sealed interface Step {
  /**
   * The highest phase a {@link Signal} may carry: executors number a collective's flags
   * {@code sequence * (MAX_PHASE + 1) + phase}, so phases 1..MAX_PHASE fit one call.
   */
  int MAX_PHASE = 7;

  long offset();

  long count();

  /** OUTPUT = INPUT over the region. */
  record Copy(long offset, long count, boolean finish) implements Step {
  }

  /** Send {@code src} over the region to {@code peer} on {@code lane}. */
  record Send(int peer, int lane, Buf src, long offset, long count) implements Step {
  }

  /** Receive the region from {@code peer} on {@code lane}; OUTPUT = acc op message. */
  record RecvReduce(int peer, int lane, Buf acc, long offset, long count, boolean finish)
      implements Step {
  }

  /**
   * Receive the region from {@code peer} on {@code lane}; {@code dst} (OUTPUT, or STAGE in a
   * staged plan) = message.
   */
  record RecvCopy(int peer, int lane, Buf dst, long offset, long count) implements Step {
    public RecvCopy {
      if (dst == Buf.INPUT) {
        throw new IllegalArgumentException("a receive cannot write INPUT");
      }
    }

    /** Into OUTPUT. */
    public RecvCopy(int peer, int lane, long offset, long count) {
      this(peer, lane, Buf.OUTPUT, offset, count);
    }
  }

  /**
   * STAGE = OUTPUT over the region: the rank's device OUTPUT copied to its host staging memory
   * (a device-to-host copy on the GPU path).
   */
  record StageOut(long offset, long count) implements Step {
  }

  /**
   * OUTPUT = STAGE over the region: the host staging memory copied back to the device (a
   * host-to-device copy), then finished there when {@code finish} (an AVG divides on the GPU).
   */
  record StageIn(long offset, long count, boolean finish) implements Step {
  }

  /** Publish "this rank has reached phase {@code phase}" to its local peers (release). */
  record Signal(int phase) implements Step {
    @Override
    public long offset() {
      return 0;
    }

    @Override
    public long count() {
      return 0;
    }
  }

  /** Block until local {@code peer} has signalled {@code phase} or later (acquire). */
  record Wait(int peer, int phase) implements Step {
    @Override
    public long offset() {
      return 0;
    }

    @Override
    public long count() {
      return 0;
    }
  }

  /** OUTPUT = op over {@code peers[0..]}'s {@code buf}, in that order (same order on every rank). */
  record ReduceFrom(int[] peers, Buf buf, long offset, long count, boolean finish)
      implements Step {
    @Override
    public boolean equals(Object o) {
      return o instanceof ReduceFrom r && Arrays.equals(peers, r.peers) && buf == r.buf
          && offset == r.offset && count == r.count && finish == r.finish;
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(peers) * 31 + Long.hashCode(offset * 17 + count);
    }

    @Override
    public String toString() {
      return "ReduceFrom[peers=" + Arrays.toString(peers) + ", buf=" + buf + ", offset="
          + offset + ", count=" + count + ", finish=" + finish + "]";
    }
  }

  /** OUTPUT = {@code peer}'s {@code buf} over the region. */
  record CopyFrom(int peer, Buf buf, long offset, long count) implements Step {
  }
}

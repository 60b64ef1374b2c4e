package io.treeline.plan;

/**
 * The per-rank program of a pipelined tree allreduce, shared by {@link DoubleBinaryTree} and
 * {@link Hierarchical}. Each chunk is split in two halves, half t going over tree t, and both
 * trees of chunk c reduce upwards before chunk c-1 is broadcast down, so that a rank always has
 * an up-going and a down-going chunk in flight (seed 003: NCCL's proxy posts the receive from
 * the parent before the sends to the children complete).
 *
 * <p>Going up, a rank receives and reduces from each child in order, starting from {@code acc}
 * (INPUT, or OUTPUT when an earlier phase left a partial there, or STAGE in a staged plan), and
 * sends the sum to its parent; the root's last reduce finishes the value unless the plan
 * finishes it later. Going down it receives the final value from its parent and forwards it to
 * its children. Everything after the first reduce lives in {@code work}: OUTPUT, or STAGE when
 * the tree runs on host copies of device buffers.
 */
final class TreePipeline {
  /** A rank's place in one tree: whom it hears from going up and whom it tells going down. */
  record Role(int[] upFrom, int upTo, int downFrom, int[] downTo) {
  }

  private TreePipeline() {
  }

  /**
   * @param roles the rank's role in tree 0 and tree 1
   * @param lanes the lane each tree's messages travel on
   * @param lo first element of the region the trees reduce
   * @param count elements in that region
   */
  static void emit(Schedule s, Role[] roles, int[] lanes, Buf acc, long lo, long count,
      long chunkElems, int align) {
    emit(s, roles, lanes, acc, Buf.OUTPUT, true, lo, count, chunkElems, align);
  }

  /**
   * @param work where partial sums and the result live (OUTPUT or STAGE)
   * @param finish whether the root's last reduce finishes the value
   */
  static void emit(Schedule s, Role[] roles, int[] lanes, Buf acc, Buf work, boolean finish,
      long lo, long count, long chunkElems, int align) {
    long chunks = Math.max(1, (count + chunkElems - 1) / chunkElems);
    // The tree whose part starts with a send goes first (a leaf going up, the root going down):
    // a rank that is a leaf of one tree and inside the other then sends its leaf's half before
    // it waits for its children's, so both trees' hops run at once. Receive first, and over two
    // nodes the hops of the two trees ran one after the other: three network latencies a call
    // instead of two (64 B - 64 KiB across 2 simulated nodes, 2026-12-06).
    int upFirst = roles[1].upFrom.length == 0 && roles[0].upFrom.length > 0 ? 1 : 0;
    int downFirst = roles[1].downFrom < 0 && roles[0].downFrom >= 0 ? 1 : 0;
    for (long c = 0; c <= chunks; c++) {
      if (c < chunks) {
        for (int i = 0; i < 2; i++) {
          int t = upFirst ^ i;
          up(s, roles[t], lanes[t], acc, work, finish, half(lo, count, chunkElems, c, t, align,
              true), half(lo, count, chunkElems, c, t, align, false));
        }
      }
      if (c > 0) {
        for (int i = 0; i < 2; i++) {
          int t = downFirst ^ i;
          down(s, roles[t], lanes[t], work, half(lo, count, chunkElems, c - 1, t, align, true),
              half(lo, count, chunkElems, c - 1, t, align, false));
        }
      }
    }
  }

  /** Offset (first=true) or length of tree t's half of chunk c. */
  private static long half(long lo, long count, long chunkElems, long c, int t, int align,
      boolean first) {
    long cLo = c * chunkElems;
    long cLen = Math.min(chunkElems, count - cLo);
    if (cLen <= 0) {
      return first ? lo + count : 0;
    }
    long hLo = Slices.lo(cLen, 2, t, align);
    return first ? lo + cLo + hLo : Slices.size(cLen, 2, t, align);
  }

  private static void up(Schedule s, Role r, int lane, Buf acc, Buf work, boolean finish,
      long off, long n) {
    if (n == 0) {
      return;
    }
    Buf cur = acc;
    for (int i = 0; i < r.upFrom.length; i++) {
      boolean last = i == r.upFrom.length - 1;
      s.recvReduce(r.upFrom[i], lane, cur, off, n, finish && last && r.upTo < 0);
      cur = work;
    }
    if (r.upTo >= 0) {
      s.send(r.upTo, lane, cur, off, n);
    } else if (r.upFrom.length == 0) {
      if (acc != Buf.INPUT) {
        throw new IllegalStateException("a one-vertex tree can only start from INPUT");
      }
      s.copy(off, n, true); // a tree of one vertex
    }
  }

  private static void down(Schedule s, Role r, int lane, Buf work, long off, long n) {
    if (n == 0) {
      return;
    }
    if (r.downFrom >= 0) {
      s.recvCopy(r.downFrom, lane, work, off, n);
    }
    for (int child : r.downTo) {
      s.send(child, lane, work, off, n);
    }
  }
}

package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * The ring, in rank order (node-major, so each node's ranks are consecutive and only one link
 * per node pair crosses the network). The message is cut into one slice per rank; a slice
 * larger than a chunk moves in rounds, round k carrying piece k of every slice.
 *
 * <p>Reduce-scatter: at step s (0..n-2) rank r sends block r-s-1 and receives, and reduces into
 * its own contribution, block r-s-2 from rank r-1; after n-1 steps rank r holds block r
 * reduced over all ranks. All-gather: at step s rank r forwards block r-s and receives block
 * r-s-1. Every rank sends and receives 2(n-1)/n of the message in an allreduce.
 */
public final class Ring {
  public static final String NAME = "ring";

  private Ring() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    return build(Collective.ALL_REDUCE, topo, type, count, cfg);
  }

  public static Plan reduceScatter(Topology topo, DataType type, long count, PlanConfig cfg) {
    return build(Collective.REDUCE_SCATTER, topo, type, count, cfg);
  }

  public static Plan allGather(Topology topo, DataType type, long count, PlanConfig cfg) {
    return build(Collective.ALL_GATHER, topo, type, count, cfg);
  }

  private static Plan build(Collective what, Topology topo, DataType type, long count,
      PlanConfig cfg) {
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    long chunk = cfg.chunkElements(type.size());
    long maxSlice = 0;
    for (int b = 0; b < n; b++) {
      maxSlice = Math.max(maxSlice, Slices.size(count, n, b, align));
    }
    long rounds = Math.max(1, (maxSlice + chunk - 1) / chunk);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      int r = s.rank;
      int next = (r + 1) % n;
      int prev = (r - 1 + n) % n;
      for (long k = 0; k < rounds; k++) {
        if (what == Collective.ALL_GATHER) {
          s.copy(pieceLo(count, n, r, align, chunk, k), pieceLen(count, n, r, align, chunk, k),
              false);
        } else if (n == 1) {
          s.copy(pieceLo(count, n, 0, align, chunk, k), pieceLen(count, n, 0, align, chunk, k),
              true);
        } else {
          for (int step = 0; step < n - 1; step++) {
            int out = Math.floorMod(r - step - 1, n);
            int in = Math.floorMod(r - step - 2, n);
            s.send(next, 0, step == 0 ? Buf.INPUT : Buf.OUTPUT,
                pieceLo(count, n, out, align, chunk, k), pieceLen(count, n, out, align, chunk, k));
            s.recvReduce(prev, 0, Buf.INPUT, pieceLo(count, n, in, align, chunk, k),
                pieceLen(count, n, in, align, chunk, k), step == n - 2);
          }
        }
        if (what != Collective.REDUCE_SCATTER) {
          for (int step = 0; step < n - 1; step++) {
            int out = Math.floorMod(r - step, n);
            int in = Math.floorMod(r - step - 1, n);
            s.send(next, 0, Buf.OUTPUT, pieceLo(count, n, out, align, chunk, k),
                pieceLen(count, n, out, align, chunk, k));
            s.recvCopy(prev, 0, Buf.OUTPUT, pieceLo(count, n, in, align, chunk, k),
                pieceLen(count, n, in, align, chunk, k));
          }
        }
      }
    }
    return new Plan(what, NAME, topo, type, count, -1, cfg, Schedule.steps(ranks), List.of(),
        1);
  }

  private static long pieceLo(long count, int n, int block, int align, long chunk, long k) {
    long lo = Slices.lo(count, n, block, align);
    return Math.min(lo + k * chunk, Slices.hi(count, n, block, align));
  }

  private static long pieceLen(long count, int n, int block, int align, long chunk, long k) {
    long hi = Slices.hi(count, n, block, align);
    return Math.max(0, Math.min(hi, Slices.lo(count, n, block, align) + (k + 1) * chunk)
        - pieceLo(count, n, block, align, chunk, k));
  }
}

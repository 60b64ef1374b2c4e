package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * Broadcast down a pipelined binary tree ({@link BinaryTrees#btree}) over all ranks, rotated so
 * that vertex 0 is the root rank. Chunk c is forwarded while chunk c+1 is still arriving.
 */
public final class TreeBroadcast {
  public static final String NAME = "tree-broadcast";

  private TreeBroadcast() {
  }

  public static Plan broadcast(Topology topo, DataType type, long count, int root,
      PlanConfig cfg) {
    int n = topo.size();
    if (root < 0 || root >= n) {
      throw new IllegalArgumentException("broadcast root " + root + " is not a rank of " + n);
    }
    TreeShape tree = BinaryTrees.btree(n);
    long chunk = cfg.chunkElements(type.size());
    long chunks = Math.max(1, (count + chunk - 1) / chunk);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      int v = Math.floorMod(s.rank - root, n);
      int parent = tree.parent()[v] < 0 ? -1 : (tree.parent()[v] + root) % n;
      int[] kids = tree.children()[v];
      if (parent < 0) {
        s.copy(0, count, false);
      }
      for (long c = 0; c < chunks; c++) {
        long lo = c * chunk;
        long len = Math.min(chunk, count - lo);
        if (parent >= 0) {
          s.recvCopy(parent, 0, Buf.OUTPUT, lo, len);
        }
        for (int k : kids) {
          s.send((k + root) % n, 0, parent < 0 ? Buf.INPUT : Buf.OUTPUT, lo, len);
        }
      }
    }
    return new Plan(Collective.BROADCAST, NAME, topo, type, count, root, cfg,
        Schedule.steps(ranks), List.of(), 1);
  }
}

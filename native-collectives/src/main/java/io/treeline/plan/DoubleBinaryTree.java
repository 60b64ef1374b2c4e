package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * NCCL's double binary tree: two trees over the nodes ({@link BinaryTrees}), each carrying half
 * of every chunk, and inside each node a chain of its ranks, as NCCL builds its tree channels.
 * Tree 1's chain runs from local rank 0 (the node's head in tree 1) to the last local rank;
 * tree 2's runs the other way, so the two heads differ and both ends of the chain are busy.
 */
public final class DoubleBinaryTree {
  public static final String NAME = "dbt";

  private DoubleBinaryTree() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    int nodes = topo.nodes();
    TreeShape[] trees = {BinaryTrees.dtree(nodes, 0), BinaryTrees.dtree(nodes, 1)};
    List<Schedule> ranks = Schedule.forRanks(topo.size());
    long chunk = cfg.chunkElements(type.size());
    int align = cfg.alignElements(type.size());
    int[] lanes = {0, 1};
    for (int r = 0; r < topo.size(); r++) {
      TreePipeline.Role[] roles = {role(topo, trees[0], 0, r), role(topo, trees[1], 1, r)};
      TreePipeline.emit(ranks.get(r), roles, lanes, Buf.INPUT, 0, count, chunk, align);
    }
    return new Plan(Collective.ALL_REDUCE, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(trees), 2);
  }

  /** The local rank at position p of node n's chain in tree t (position 0 is the head). */
  static int chain(Topology topo, int node, int t, int p) {
    int local = t == 0 ? p : topo.localSize(node) - 1 - p;
    return topo.rank(node, local);
  }

  private static TreePipeline.Role role(Topology topo, TreeShape tree, int t, int rank) {
    int node = topo.node(rank);
    int len = topo.localSize(node);
    int p = t == 0 ? topo.localRank(rank) : len - 1 - topo.localRank(rank);
    int next = p + 1 < len ? chain(topo, node, t, p + 1) : -1;
    int prev = p > 0 ? chain(topo, node, t, p - 1) : -1;
    int[] childHeads = new int[0];
    int parentHead = -1;
    if (p == 0) {
      int[] ch = tree.children()[node];
      childHeads = new int[ch.length];
      for (int i = 0; i < ch.length; i++) {
        childHeads[i] = chain(topo, ch[i], t, 0);
      }
      int pn = tree.parent()[node];
      parentHead = pn >= 0 ? chain(topo, pn, t, 0) : -1;
    }
    int[] below = next >= 0 ? prepend(next, childHeads) : childHeads;
    int above = p > 0 ? prev : parentHead;
    return new TreePipeline.Role(below, above, above, below);
  }

  private static int[] prepend(int x, int[] xs) {
    int[] out = new int[xs.length + 1];
    out[0] = x;
    System.arraycopy(xs, 0, out, 1, xs.length);
    return out;
  }
}

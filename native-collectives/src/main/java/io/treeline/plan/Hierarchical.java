package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * Treeline's main allreduce. With S = the largest number of ranks on any node, the message is
 * cut into S slices; on node n, slice s belongs to local rank {@code s mod localSize(n)}.
 * <ol>
 *   <li>Intra-node reduce-scatter: each rank reduces its slices by reading every local peer's
 *       INPUT in place (peer memory: IPC-mapped on GPUs, shm on hosts).</li>
 *   <li>Inter-node: for each slice, its owners on all nodes run the pipelined double binary tree
 *       ({@link BinaryTrees}) on their partial sums, on lanes 2s and 2s+1.</li>
 *   <li>Intra-node all-gather: each rank copies the other slices from their owners' OUTPUT.</li>
 * </ol>
 * Phases are separated by signals: 1 (my INPUT is ready), 2 (my slices are final), 3 (I have
 * finished reading my peers), so that nobody reads a slice before it is final and nobody leaves
 * while a peer still reads its buffers. One node makes this {@link TwoShot}; one rank per node
 * makes it {@link DoubleBinaryTree} with one-rank chains.
 *
 * <p>Across nodes the slices and the trees' halves fall on multiples of the network grain
 * ({@link PlanConfig#netGrainElements(int, int)}), not only of the alignment: a message of
 * 256 B over 2 nodes x 2 ranks was cut into 2 slices of 2 halves, 4 network messages a hop
 * where one does, and took 23-26 us where 64 B (one slice, one tree: the alignment left no
 * more) took 15.
 */
public final class Hierarchical {
  public static final String NAME = "hierarchical";

  private Hierarchical() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    int nodes = topo.nodes();
    int slices = topo.maxLocalSize();
    // one node: two-shot, whose slices the alignment alone cuts (its crossover was fit so)
    int align = nodes > 1 ? cfg.netGrainElements(type.size(), slices)
        : cfg.alignElements(type.size());
    long chunk = cfg.chunkElements(type.size());
    TreeShape[] trees = {BinaryTrees.dtree(nodes, 0), BinaryTrees.dtree(nodes, 1)};
    List<Schedule> ranks = Schedule.forRanks(topo.size());
    for (int r = 0; r < topo.size(); r++) {
      Schedule s = ranks.get(r);
      int node = topo.node(r);
      int local = topo.localRank(r);
      int len = topo.localSize(node);
      int[] group = localGroup(topo, node);
      if (len > 1) {
        reduceScatterInside(s, group, local, slices, count, align, nodes == 1);
      }
      if (nodes > 1) {
        Buf acc = len > 1 ? Buf.OUTPUT : Buf.INPUT;
        for (int sl = local; sl < slices; sl += len) {
          TreePipeline.Role[] roles = {role(topo, trees[0], sl, r), role(topo, trees[1], sl, r)};
          TreePipeline.emit(s, roles, new int[] {2 * sl, 2 * sl + 1}, acc,
              Slices.lo(count, slices, sl, align), Slices.size(count, slices, sl, align), chunk,
              align);
        }
      } else if (len == 1) {
        s.copy(0, count, true);
      }
      if (len > 1) {
        allGatherInside(s, topo, r, slices, count, align);
      }
    }
    return new Plan(Collective.ALL_REDUCE, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), nodes > 1 ? List.of(trees) : List.of(), 2 * slices);
  }

  /**
   * Phase 1 on one rank: signal 1 (INPUT ready), wait for the node, then reduce every slice the
   * rank owns (slice s belongs to local rank s mod the node's size) from all local INPUTs.
   */
  static void reduceScatterInside(Schedule s, int[] group, int local, int slices, long count,
      int align, boolean finish) {
    s.barrier(group, 1);
    for (int sl = local; sl < slices; sl += group.length) {
      s.reduceFrom(group, Buf.INPUT, Slices.lo(count, slices, sl, align),
          Slices.size(count, slices, sl, align), finish);
    }
  }

  /**
   * Phase 3 on rank {@code r}: signal 2 (my slices are final), copy every other slice from its
   * owner's OUTPUT, signal 3 (done reading) and wait for the node, so nobody leaves while read.
   */
  static void allGatherInside(Schedule s, Topology topo, int r, int slices, long count,
      int align) {
    int node = topo.node(r);
    int len = topo.localSize(node);
    int[] group = localGroup(topo, node);
    s.barrier(group, 2);
    for (int sl = 0; sl < slices; sl++) {
      int owner = topo.rank(node, sl % len);
      if (owner != r) {
        s.copyFrom(owner, Buf.OUTPUT, Slices.lo(count, slices, sl, align),
            Slices.size(count, slices, sl, align));
      }
    }
    s.barrier(group, 3);
  }

  static int[] localGroup(Topology topo, int node) {
    int[] g = new int[topo.localSize(node)];
    for (int l = 0; l < g.length; l++) {
      g[l] = topo.rank(node, l);
    }
    return g;
  }

  private static int owner(Topology topo, int node, int slice) {
    return topo.rank(node, slice % topo.localSize(node));
  }

  static TreePipeline.Role role(Topology topo, TreeShape tree, int slice, int rank) {
    int node = topo.node(rank);
    int[] ch = tree.children()[node];
    int[] kids = new int[ch.length];
    for (int i = 0; i < ch.length; i++) {
      kids[i] = owner(topo, ch[i], slice);
    }
    int pn = tree.parent()[node];
    int parent = pn >= 0 ? owner(topo, pn, slice) : -1;
    return new TreePipeline.Role(kids, parent, parent, kids);
  }
}

package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * The GPU path's allreduce across nodes: {@link Hierarchical} whose inter-node phase runs on
 * host copies of the device slices, because the network (TCP today) cannot read GPU memory.
 * With S = the largest number of ranks on any node, slice s on node n belongs to local rank
 * {@code s mod localSize(n)}, as in {@link Hierarchical}:
 * <ol>
 *   <li>Intra-node reduce-scatter on the GPUs: each rank reduces its slices into its OUTPUT by
 *       reading every local peer's INPUT in place (CUDA IPC). A node of one rank copies its
 *       INPUT to OUTPUT instead.</li>
 *   <li>Staging: each slice is cut into stage chunks of {@code stageChunkBytes}; every chunk is
 *       copied device-to-host ({@link Step.StageOut}), then chunk by chunk the slice's owners on
 *       all nodes run the pipelined double binary tree on the host copies (lanes 2s and 2s+1,
 *       the tree's root does not finish), and each chunk is copied back ({@link Step.StageIn})
 *       and finished on the device, where an AVG divides once by all ranks.</li>
 *   <li>Intra-node all-gather on the GPUs: each rank copies the other slices from their owners'
 *       OUTPUT.</li>
 * </ol>
 * Signals 1, 2, 3 separate the phases as in {@link Hierarchical}. The staged tree of one chunk
 * is, step for step, the {@link DoubleBinaryTree} allreduce of the ranks that own the slice (one
 * per node) on that chunk, with INPUT and OUTPUT read as STAGE and lanes renumbered (a test
 * checks it). The GPU path runs these steps themselves ({@code exec.StagedRunner} over the
 * slice owners' network link, STAGE in pinned host memory), so what the symbolic executor
 * proves here is what crosses the network.
 */
public final class StagedHierarchical {
  public static final String NAME = "hierarchical-staged";
  /** The staging chunk of the GPU path unless configured: 4 MiB. */
  public static final long DEFAULT_STAGE_CHUNK_BYTES = 4L << 20;

  private StagedHierarchical() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg,
      long stageChunkBytes) {
    if (stageChunkBytes < cfg.alignBytes()) {
      throw new IllegalArgumentException("the staging chunk (" + stageChunkBytes
          + " bytes) must be at least the alignment (" + cfg.alignBytes() + " bytes)");
    }
    int nodes = topo.nodes();
    int slices = topo.maxLocalSize();
    int align = cfg.alignElements(type.size());
    long chunk = cfg.chunkElements(type.size());
    long stage = stageElements(type, cfg, stageChunkBytes);
    TreeShape[] trees = {BinaryTrees.dtree(nodes, 0), BinaryTrees.dtree(nodes, 1)};
    List<Schedule> ranks = Schedule.forRanks(topo.size());
    for (int r = 0; r < topo.size(); r++) {
      Schedule s = ranks.get(r);
      int node = topo.node(r);
      int local = topo.localRank(r);
      int len = topo.localSize(node);
      int[] group = Hierarchical.localGroup(topo, node);
      if (len > 1) {
        Hierarchical.reduceScatterInside(s, group, local, slices, count, align, nodes == 1);
      } else {
        for (int sl = 0; sl < slices; sl++) {
          s.copy(Slices.lo(count, slices, sl, align), Slices.size(count, slices, sl, align),
              nodes == 1);
        }
      }
      if (nodes > 1) {
        for (int sl = local; sl < slices; sl += len) {
          long lo = Slices.lo(count, slices, sl, align);
          long size = Slices.size(count, slices, sl, align);
          for (long c = 0; c < size; c += stage) {
            s.stageOut(lo + c, Math.min(stage, size - c));
          }
          TreePipeline.Role[] roles = {Hierarchical.role(topo, trees[0], sl, r),
              Hierarchical.role(topo, trees[1], sl, r)};
          int[] lanes = {2 * sl, 2 * sl + 1};
          for (long c = 0; c < size; c += stage) {
            long n = Math.min(stage, size - c);
            TreePipeline.emit(s, roles, lanes, Buf.STAGE, Buf.STAGE, false, lo + c, n, chunk,
                align);
            s.stageIn(lo + c, n, true);
          }
        }
      }
      if (len > 1) {
        Hierarchical.allGatherInside(s, topo, r, slices, count, align);
      }
    }
    return new Plan(Collective.ALL_REDUCE, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), nodes > 1 ? List.of(trees) : List.of(), 2 * slices);
  }

  /** The elements of one stage chunk: {@code stageChunkBytes} rounded down to the alignment. */
  public static long stageElements(DataType type, PlanConfig cfg, long stageChunkBytes) {
    int align = cfg.alignElements(type.size());
    return Math.max(align, stageChunkBytes / type.size() / align * align);
  }
}

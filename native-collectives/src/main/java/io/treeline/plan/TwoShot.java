package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * Large messages inside one node: reduce-scatter by reading peers' slices in place (rank i
 * reduces slice i of every local INPUT), then all-gather by reading peers' reduced slices from
 * their OUTPUT. Every byte is read n times in all instead of n^2 times as in {@link OneShot}.
 */
public final class TwoShot {
  public static final String NAME = "twoshot";

  private TwoShot() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    Plan p = Hierarchical.allReduce(topo, type, count, cfg);
    return new Plan(p.collective(), NAME, topo, type, count, -1, cfg, p.steps(), List.of(), 0);
  }

  /**
   * All-gather in place, the second half of {@link #allReduce}: rank i's OUTPUT holds its final
   * slice i; every rank copies the other slices from their owners' OUTPUT. Between the two
   * halves something else may finish the slices (the GPU path's allreduce across nodes does:
   * its slices cross the network between the reduce-scatter and this).
   */
  public static Plan allGatherInPlace(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      if (n == 1) {
        continue;
      }
      s.barrier(group, 1);
      for (int p : group) {
        if (p != s.rank) {
          s.copyFrom(p, Buf.OUTPUT, Slices.lo(count, n, p, align), Slices.size(count, n, p,
              align));
        }
      }
      s.barrier(group, 2);
    }
    return new Plan(Collective.ALL_GATHER, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }

  /** Reduce-scatter alone: rank i ends with slice i reduced; peers' INPUTs stay until all read. */
  public static Plan reduceScatter(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      long lo = Slices.lo(count, n, s.rank, align);
      long len = Slices.size(count, n, s.rank, align);
      if (n == 1) {
        s.copy(lo, len, true);
        continue;
      }
      s.barrier(group, 1);
      s.reduceFrom(group, Buf.INPUT, lo, len, true);
      s.barrier(group, 2);
    }
    return new Plan(Collective.REDUCE_SCATTER, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }
}

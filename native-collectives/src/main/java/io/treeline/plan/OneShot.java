package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * Small messages inside one node: after one barrier every rank reads all local INPUTs in place
 * and reduces the whole message itself (in rank order, so all ranks get the same bits); a
 * second barrier keeps every INPUT alive until all peers have read it. Two synchronisations and
 * no slicing: latency-optimal, at (n-1) times the bytes read of {@link TwoShot}.
 *
 * <p>{@link #allReduceReleased} drops the second barrier's waits: each rank ends with the
 * signal alone, a deferred release ({@link Plan#releasePhase}). The executor then waits for
 * every local peer's release before this rank next writes its buffers (the next call's copy-in
 * or run), by which time the peers have long finished reading; so a call costs one
 * synchronisation instead of two. For callers that control every write into the registered
 * buffers (the host communicator's copying path), not for windows the user fills in place.
 */
public final class OneShot {
  public static final String NAME = "oneshot";

  private OneShot() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    return allReduce(topo, type, count, cfg, false);
  }

  /** The one-shot allreduce ending in a deferred release instead of a second barrier. */
  public static Plan allReduceReleased(Topology topo, DataType type, long count,
      PlanConfig cfg) {
    return allReduce(topo, type, count, cfg, true);
  }

  private static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg,
      boolean released) {
    requireOneNode(topo, NAME);
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(topo.size());
    for (Schedule s : ranks) {
      if (group.length == 1) {
        s.copy(0, count, true);
        continue;
      }
      s.barrier(group, 1);
      s.reduceFrom(group, Buf.INPUT, 0, count, true);
      if (released) {
        s.signal(2); // the peers' reads are awaited before this rank's next copy-in
      } else {
        s.barrier(group, 2);
      }
    }
    return new Plan(Collective.ALL_REDUCE, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }

  static void requireOneNode(Topology topo, String algo) {
    if (topo.nodes() != 1) {
      throw new IllegalArgumentException(algo + " runs inside one node, and this topology has "
          + topo.nodes() + " nodes; use " + Hierarchical.NAME + " (it runs " + algo
          + "-style phases inside each node and trees across nodes)");
    }
  }
}

package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * A schedule: for every rank, the ordered steps it executes. Pure data: it names no transport,
 * and the same plan runs on threads, on shared memory and TCP, or on GPUs.
 *
 * @param algorithm the algorithm's name as {@code ./treeline plan --algo} spells it
 * @param root the root rank of a broadcast, -1 otherwise
 * @param trees the trees over nodes (tree 1 then tree 2) for tree algorithms, else empty
 * @param lanes how many message lanes (independent FIFOs per ordered rank pair) the plan uses
 */
public record Plan(Collective collective, String algorithm, Topology topology, DataType type,
    long count, int root, PlanConfig config, List<List<Step>> steps, List<TreeShape> trees,
    int lanes) {

  public Plan {
    if (steps.size() != topology.size()) {
      throw new IllegalArgumentException("a plan needs one schedule per rank");
    }
    steps = List.copyOf(steps);
    trees = List.copyOf(trees);
  }

  public List<Step> steps(int rank) {
    return steps.get(rank);
  }

  /**
   * The phase of {@code rank}'s deferred release, or 0 when it has none: a schedule that ends
   * with a {@link Step.Signal} that every rank of its node also ends with does not wait for its
   * peers to finish reading its buffers; whoever runs it must wait, before it next writes them,
   * until every local peer has signalled that phase of this call.
   */
  public int releasePhase(int rank) {
    int phase = lastSignal(rank);
    if (phase == 0) {
      return 0;
    }
    int node = topology.node(rank);
    for (int l = 0; l < topology.localSize(node); l++) {
      if (lastSignal(topology.rank(node, l)) != phase) {
        return 0;
      }
    }
    return phase;
  }

  private int lastSignal(int rank) {
    List<Step> s = steps.get(rank);
    return !s.isEmpty() && s.get(s.size() - 1) instanceof Step.Signal g ? g.phase() : 0;
  }

  public int size() {
    return topology.size();
  }

  public long bytes() {
    return count * type.size();
  }

  /** The most elements any single step moves: the size of a receive slot. */
  public long maxStepCount() {
    long m = 0;
    for (List<Step> rs : steps) {
      for (Step s : rs) {
        m = Math.max(m, s.count());
      }
    }
    return m;
  }

  public int totalSteps() {
    int n = 0;
    for (List<Step> rs : steps) {
      n += rs.size();
    }
    return n;
  }
}

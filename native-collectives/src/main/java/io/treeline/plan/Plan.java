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

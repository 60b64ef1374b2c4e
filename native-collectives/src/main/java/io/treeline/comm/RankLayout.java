package io.treeline.comm;

import io.treeline.plan.Topology;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How the ranks of a job sit on nodes, computed the same on every rank from the all-gathered
 * node ids: nodes in order of their lowest rank, ranks node-major inside a node. {@code planOf}
 * maps a bootstrap rank to its place in that order (the "topology rank" plans use and the slice
 * a reduce-scatter gives it); {@code bootOf} is the inverse.
 */
public record RankLayout(Topology topology, int[] planOf, int[] bootOf) {
  public static RankLayout of(String[] nodeIds) {
    int n = nodeIds.length;
    Map<String, List<Integer>> byNode = new LinkedHashMap<>();
    for (int r = 0; r < n; r++) {
      byNode.computeIfAbsent(nodeIds[r], k -> new ArrayList<>()).add(r);
    }
    int[] perNode = new int[byNode.size()];
    int[] planOf = new int[n];
    int[] bootOf = new int[n];
    int next = 0;
    int k = 0;
    for (List<Integer> ranks : byNode.values()) {
      perNode[k++] = ranks.size();
      for (int r : ranks) {
        planOf[r] = next;
        bootOf[next++] = r;
      }
    }
    return new RankLayout(Topology.of(perNode), planOf, bootOf);
  }
}

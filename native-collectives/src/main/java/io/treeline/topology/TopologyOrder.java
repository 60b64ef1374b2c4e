package io.treeline.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Orders the GPUs of a node so that neighbours in the intra-node chain or ring, and the slice
 * owners of the two-shot plan that read from each other at the same time, sit behind different
 * PCIe switches (seed 004, 4.3: GPUs under one switch share its bandwidth): round-robin over
 * the switch groups, in GPU order inside each.
 */
public final class TopologyOrder {
  private TopologyOrder() {
  }

  /** @param switchOf the switch group of GPU i; returns GPU indices in rank order */
  public static int[] spreadAcrossSwitches(int[] switchOf) {
    Map<Integer, List<Integer>> groups = new TreeMap<>();
    for (int g = 0; g < switchOf.length; g++) {
      groups.computeIfAbsent(switchOf[g], k -> new ArrayList<>()).add(g);
    }
    List<List<Integer>> queues = new ArrayList<>(groups.values());
    int[] order = new int[switchOf.length];
    int k = 0;
    for (int round = 0; k < order.length; round++) {
      for (List<Integer> q : queues) {
        if (round < q.size()) {
          order[k++] = q.get(round);
        }
      }
    }
    return order;
  }
}

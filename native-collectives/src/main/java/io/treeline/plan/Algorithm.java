package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.Locale;

/** The allreduce algorithms, by the names {@code ./treeline plan --algo} and the config use. */
public enum Algorithm {
  RING(Ring.NAME),
  DBT(DoubleBinaryTree.NAME),
  ONESHOT(OneShot.NAME),
  TWOSHOT(TwoShot.NAME),
  HIERARCHICAL(Hierarchical.NAME);

  private final String id;

  Algorithm(String id) {
    this.id = id;
  }

  public String id() {
    return id;
  }

  public Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    return switch (this) {
      case RING -> Ring.allReduce(topo, type, count, cfg);
      case DBT -> DoubleBinaryTree.allReduce(topo, type, count, cfg);
      case ONESHOT -> OneShot.allReduce(topo, type, count, cfg);
      case TWOSHOT -> TwoShot.allReduce(topo, type, count, cfg);
      case HIERARCHICAL -> Hierarchical.allReduce(topo, type, count, cfg);
    };
  }

  /** Whether the algorithm can run on {@code topo} (one-shot and two-shot need one node). */
  public boolean supports(Topology topo) {
    return (this != ONESHOT && this != TWOSHOT) || topo.nodes() == 1;
  }

  /** Every algorithm's id, in declaration order, comma separated (for help and errors). */
  public static String ids() {
    return java.util.Arrays.stream(values()).map(Algorithm::id)
        .collect(java.util.stream.Collectors.joining(", "));
  }

  public static Algorithm parse(String s) {
    String k = s.trim().toLowerCase(Locale.ROOT);
    for (Algorithm a : values()) {
      if (a.id.equals(k) || a.name().toLowerCase(Locale.ROOT).equals(k)) {
        return a;
      }
    }
    if (k.equals("tree") || k.equals("double-binary-tree")) {
      return DBT;
    }
    throw new IllegalArgumentException("unknown algorithm '" + s
        + "'; expected one of " + ids());
  }
}

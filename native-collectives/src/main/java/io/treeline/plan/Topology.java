package io.treeline.plan;

import java.util.Arrays;

/**
 * Which ranks share a node. Ranks are numbered node-major: the ranks of node 0 first, then
 * node 1, and so on; inside a node by local rank. Nodes may hold different numbers of ranks.
 */
public final class Topology {
  private final int[] ranksPerNode;
  private final int[] nodeStart;
  private final int[] nodeOf;
  private final int size;

  private Topology(int[] ranksPerNode) {
    if (ranksPerNode.length == 0) {
      throw new IllegalArgumentException("a topology needs at least one node");
    }
    this.ranksPerNode = ranksPerNode.clone();
    this.nodeStart = new int[ranksPerNode.length + 1];
    for (int n = 0; n < ranksPerNode.length; n++) {
      if (ranksPerNode[n] < 1) {
        throw new IllegalArgumentException("node " + n + " has " + ranksPerNode[n]
            + " ranks; every node needs at least one");
      }
      nodeStart[n + 1] = nodeStart[n] + ranksPerNode[n];
    }
    this.size = nodeStart[ranksPerNode.length];
    this.nodeOf = new int[size];
    for (int n = 0; n < ranksPerNode.length; n++) {
      Arrays.fill(nodeOf, nodeStart[n], nodeStart[n + 1], n);
    }
  }

  /** {@code nodes} nodes of {@code ranksPerNode} ranks each (one rank per GPU). */
  public static Topology uniform(int nodes, int ranksPerNode) {
    if (nodes < 1 || ranksPerNode < 1) {
      throw new IllegalArgumentException("need nodes >= 1 and ranks per node >= 1, got "
          + nodes + " x " + ranksPerNode);
    }
    int[] r = new int[nodes];
    Arrays.fill(r, ranksPerNode);
    return new Topology(r);
  }

  /** One entry per node: how many ranks it holds. */
  public static Topology of(int... ranksPerNode) {
    return new Topology(ranksPerNode);
  }

  public int size() {
    return size;
  }

  public int nodes() {
    return ranksPerNode.length;
  }

  public int localSize(int node) {
    return ranksPerNode[node];
  }

  /** The most ranks of one node (a loop, not a stream: the selector asks on every call). */
  public int maxLocalSize() {
    int most = 0;
    for (int r : ranksPerNode) {
      most = Math.max(most, r);
    }
    return most;
  }

  public boolean isUniform() {
    return Arrays.stream(ranksPerNode).allMatch(r -> r == ranksPerNode[0]);
  }

  public int node(int rank) {
    return nodeOf[rank];
  }

  public int localRank(int rank) {
    return rank - nodeStart[nodeOf[rank]];
  }

  public int rank(int node, int localRank) {
    if (localRank < 0 || localRank >= ranksPerNode[node]) {
      throw new IndexOutOfBoundsException("node " + node + " has no local rank " + localRank);
    }
    return nodeStart[node] + localRank;
  }

  /** The first rank of {@code node}; its ranks are {@code firstRank .. firstRank+localSize-1}. */
  public int firstRank(int node) {
    return nodeStart[node];
  }

  public boolean sameNode(int a, int b) {
    return nodeOf[a] == nodeOf[b];
  }

  @Override
  public String toString() {
    return isUniform() ? ranksPerNode.length + "x" + ranksPerNode[0]
        : Arrays.toString(ranksPerNode);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Topology t && Arrays.equals(ranksPerNode, t.ranksPerNode);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(ranksPerNode);
  }
}

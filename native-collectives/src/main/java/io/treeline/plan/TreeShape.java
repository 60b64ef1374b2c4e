package io.treeline.plan;

import java.util.Arrays;

/**
 * A tree over vertices 0..n-1 (nodes, for the inter-node trees): the parent of each vertex
 * (-1 at the root) and its children, smaller child first.
 */
public record TreeShape(int[] parent, int[][] children) {
  public int size() {
    return parent.length;
  }

  public int root() {
    for (int v = 0; v < parent.length; v++) {
      if (parent[v] < 0) {
        return v;
      }
    }
    throw new IllegalStateException("tree without a root");
  }

  public int depth() {
    int max = 0;
    for (int v = 0; v < parent.length; v++) {
      int d = 0;
      for (int u = v; parent[u] >= 0; u = parent[u]) {
        d++;
      }
      max = Math.max(max, d);
    }
    return max;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TreeShape t && Arrays.equals(parent, t.parent)
        && Arrays.deepEquals(children, t.children);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(parent);
  }

  @Override
  public String toString() {
    return "TreeShape" + Arrays.toString(parent);
  }
}

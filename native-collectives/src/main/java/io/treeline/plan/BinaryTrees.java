package io.treeline.plan;

/**
 * NCCL's double binary tree ({@code src/graph/trees.cc}: {@code ncclGetBtree},
 * {@code ncclGetDtree}) as integer arithmetic.
 *
 * <p>Tree 1: vertex r's lowest set bit b gives its parent {@code (r ^ b) | (b << 1)}, or
 * {@code r ^ b} when that is out of range, and its children {@code r - b/2} and {@code r + b/2}
 * (the second shrunk by halving until in range). Vertex 0 is the root, with the single child
 * of the highest power of two below n. Odd vertices are leaves.
 *
 * <pre>
 * 0---------------8
 *          ______/ \______
 *         4               12
 *       /   \            /
 *     2       6       10
 *    / \     / \     /  \
 *   1   3   5   7   9   11
 * </pre>
 *
 * <p>Tree 2 relabels tree 1: mirrored ({@code r -> n-1-r}) when n is even, shifted
 * ({@code r -> r+1 mod n}) when n is odd. Either way a leaf of one tree is an inner vertex of
 * the other, so every link carries data both ways and no vertex does more than twice the
 * message in each direction.
 */
public final class BinaryTrees {
  private BinaryTrees() {
  }

  /** Tree 1 over n vertices. */
  public static TreeShape btree(int n) {
    int[] parent = new int[n];
    int[][] children = new int[n][];
    for (int r = 0; r < n; r++) {
      int[] pc = btreeVertex(n, r);
      parent[r] = pc[0];
      children[r] = childrenOf(pc[1], pc[2]);
    }
    return new TreeShape(parent, children);
  }

  /** Tree {@code t} (0 or 1) of the double binary tree over n vertices. */
  public static TreeShape dtree(int n, int t) {
    if (t == 0) {
      return btree(n);
    }
    if (t != 1) {
      throw new IllegalArgumentException("a double binary tree has trees 0 and 1, not " + t);
    }
    int[] parent = new int[n];
    int[][] children = new int[n][];
    for (int r = 0; r < n; r++) {
      int v = n % 2 == 1 ? (r - 1 + n) % n : n - 1 - r;
      int[] pc = btreeVertex(n, v);
      parent[r] = unmap(n, pc[0]);
      children[r] = childrenOf(unmap(n, pc[1]), unmap(n, pc[2]));
    }
    return new TreeShape(parent, children);
  }

  /** The root of tree t: 0 for tree 1; n-1 (even n) or 1 (odd n) for tree 2, as in NCCL. */
  public static int root(int n, int t) {
    if (t == 0 || n == 1) {
      return 0;
    }
    return n % 2 == 1 ? 1 : n - 1;
  }

  private static int unmap(int n, int v) {
    if (v < 0) {
      return -1;
    }
    return n % 2 == 1 ? (v + 1) % n : n - 1 - v;
  }

  /** {parent, child0, child1} of vertex r in tree 1 over n vertices; -1 where absent. */
  static int[] btreeVertex(int n, int r) {
    int bit = 1;
    while (bit < n && (bit & r) == 0) {
      bit <<= 1;
    }
    if (r == 0) {
      return new int[] {-1, -1, n > 1 ? bit >> 1 : -1};
    }
    int up = (r ^ bit) | (bit << 1);
    if (up >= n) {
      up = r ^ bit;
    }
    int low = bit >> 1;
    int down0 = low == 0 ? -1 : r - low;
    int down1 = low == 0 ? -1 : r + low;
    while (down1 >= n) {
      low >>= 1;
      down1 = low == 0 ? -1 : r + low;
    }
    return new int[] {up, down0, down1};
  }

  private static int[] childrenOf(int a, int b) {
    if (a < 0 && b < 0) {
      return new int[0];
    }
    if (a < 0) {
      return new int[] {b};
    }
    if (b < 0) {
      return new int[] {a};
    }
    return a < b ? new int[] {a, b} : new int[] {b, a};
  }
}

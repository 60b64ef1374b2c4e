package io.treeline.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class BinaryTreesTest {

  @Test
  void treeOneMatchesTheIllustrationInNcclTreesCc() {
    // 0---8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13; 2 -> 1, 3; 6 -> 5, 7; 10 -> 9, 11
    TreeShape t = BinaryTrees.btree(14);
    assertEquals(-1, t.parent()[0]);
    assertArrayEquals(new int[] {8}, t.children()[0]);
    assertArrayEquals(new int[] {4, 12}, t.children()[8]);
    assertArrayEquals(new int[] {2, 6}, t.children()[4]);
    assertArrayEquals(new int[] {10, 13}, t.children()[12]);
    assertArrayEquals(new int[] {9, 11}, t.children()[10]);
    assertEquals(12, t.parent()[13]);
    assertEquals(0, t.children()[13].length);
  }

  @Test
  void treeTwoMirrorsForEvenCountsAsInNcclTreesCc() {
    // n = 12: 11 is the root with child 3; 3 -> 1, 7; 7 -> 5, 9; 1 -> 0, 2
    TreeShape t = BinaryTrees.dtree(12, 1);
    assertEquals(11, t.root());
    assertArrayEquals(new int[] {3}, t.children()[11]);
    assertArrayEquals(new int[] {1, 7}, t.children()[3]);
    assertArrayEquals(new int[] {5, 9}, t.children()[7]);
    assertArrayEquals(new int[] {0, 2}, t.children()[1]);
    assertEquals(BinaryTrees.root(12, 1), t.root());
  }

  @Test
  void treeTwoShiftsForOddCountsAsInNcclTreesCc() {
    // n = 13: 1 is the root with child 9; 9 -> 5, 0; 5 -> 3, 7; 0 -> 11
    TreeShape t = BinaryTrees.dtree(13, 1);
    assertEquals(1, t.root());
    assertArrayEquals(new int[] {9}, t.children()[1]);
    assertArrayEquals(new int[] {0, 5}, t.children()[9]);
    assertArrayEquals(new int[] {3, 7}, t.children()[5]);
    assertArrayEquals(new int[] {11}, t.children()[0]);
    assertEquals(BinaryTrees.root(13, 1), t.root());
  }

  @Test
  void bothTreesSpanAllVerticesAndEveryVertexIsALeafInAtMostOneTreeSoDegreesSumToAtMostFour() {
    for (int n = 1; n <= 1024; n++) {
      TreeShape[] trees = {BinaryTrees.dtree(n, 0), BinaryTrees.dtree(n, 1)};
      int[] degree = new int[n];
      for (TreeShape t : trees) {
        int roots = 0;
        for (int v = 0; v < n; v++) {
          if (t.parent()[v] < 0) {
            roots++;
          } else {
            int p = t.parent()[v];
            boolean listed = false;
            for (int c : t.children()[p]) {
              listed |= c == v;
            }
            assertTrue(listed, "n=" + n + ": " + v + " not a child of its parent " + p);
            degree[v]++;
          }
          assertTrue(t.children()[v].length <= 2);
          degree[v] += t.children()[v].length;
        }
        assertEquals(1, roots, "n=" + n);
        // every vertex reaches the root: depth() would loop forever otherwise
        assertTrue(t.depth() <= 2 * (32 - Integer.numberOfLeadingZeros(n)), "n=" + n);
      }
      for (int v = 0; v < n; v++) {
        assertTrue(degree[v] <= 4, "n=" + n + " vertex " + v + " has degree " + degree[v]);
        if (n > 1) {
          assertTrue(degree[v] >= 2, "n=" + n + " vertex " + v);
        }
      }
    }
  }
}

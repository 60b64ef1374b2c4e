package io.treeline.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The GPU path's second half across nodes: every rank's OUTPUT already holds its final slice;
 * the plan must copy exactly the other slices from their owners' OUTPUT, between a barrier that
 * orders the copies after every owner's write and one that keeps the slices until all have read.
 */
class TwoShotAllGatherInPlaceTest {
  @Test
  void everyRankCopiesEveryOtherSliceOnceBetweenTwoBarriers() {
    for (int n : new int[] {1, 2, 3, 4, 7, 8}) {
      for (long count : new long[] {0, 1, 13, 1021, 65_537}) {
        Topology topo = Topology.of(n);
        Plan p = TwoShot.allGatherInPlace(topo, DataType.BF16, count, PlanConfig.DEFAULT);
        int align = PlanConfig.DEFAULT.alignElements(2);
        for (int r = 0; r < n; r++) {
          List<Step> steps = p.steps(r);
          if (n == 1) {
            assertTrue(steps.isEmpty(), "one rank has nothing to gather");
            continue;
          }
          boolean[] covered = new boolean[(int) count];
          long own = Slices.size(count, n, r, align);
          for (long i = Slices.lo(count, n, r, align); i < Slices.hi(count, n, r, align); i++) {
            covered[(int) i] = true;
          }
          int barriers = 0;
          long copied = 0;
          for (Step s : steps) {
            if (s instanceof Step.Signal) {
              barriers++;
            } else if (s instanceof Step.CopyFrom c) {
              assertEquals(1, barriers, "copies come after the first barrier, before the second");
              assertEquals(Buf.OUTPUT, c.buf());
              assertEquals(Slices.lo(count, n, c.peer(), align), c.offset());
              assertEquals(Slices.size(count, n, c.peer(), align), c.count());
              for (long i = c.offset(); i < c.offset() + c.count(); i++) {
                assertTrue(!covered[(int) i], "element " + i + " copied twice on rank " + r);
                covered[(int) i] = true;
              }
              copied += c.count();
            } else {
              assertInstanceOf(Step.Wait.class, s, "only barriers and copies: " + s);
            }
          }
          assertEquals(2, barriers);
          assertEquals(count, copied + own, n + " ranks, " + count + " elements, rank " + r);
        }
      }
    }
  }
}

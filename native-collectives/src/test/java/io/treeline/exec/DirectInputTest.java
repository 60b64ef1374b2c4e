package io.treeline.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.plan.Hierarchical;
import io.treeline.plan.OneShot;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Slices;
import io.treeline.plan.Topology;
import io.treeline.plan.TwoShot;
import org.junit.jupiter.api.Test;

/** Which parts of a rank's input its peers read (PlanRunner's direct input). */
class DirectInputTest {
  @Test
  void twoShotCopiesInEverySliceButTheRanksOwn() {
    for (int n : new int[] {2, 3, 4, 8}) {
      for (long count : new long[] {7, 1001, 65537}) {
        for (PlanConfig cfg : new PlanConfig[] {PlanConfig.DEFAULT,
            PlanConfig.DEFAULT.withPeerChunkBytes(4096)}) {
          Plan p = TwoShot.allReduce(Topology.uniform(1, n), DataType.F32, count, cfg);
          int align = cfg.alignElements(4);
          for (int r = 0; r < n; r++) {
            long[][] read = PlanRunner.directInput(p, r, PlanRunner.directOutput(p, r));
            long ownLo = Slices.lo(count, n, r, align);
            long ownSize = Slices.size(count, n, r, align);
            if (ownSize == 0) {
              // peers read all of it: nothing saved, the whole input is copied in
              assertNull(read, n + " ranks, " + count + ": rank " + r);
              continue;
            }
            assertNotNull(read, n + " ranks, " + count + ": rank " + r);
            long total = 0;
            long end = -1;
            for (int k = 0; k < read[0].length; k++) {
              long lo = read[0][k];
              long hi = lo + read[1][k];
              assertTrue(lo > end, "ascending and disjoint");
              assertTrue(hi <= ownLo || lo >= ownLo + ownSize, "the own slice is not copied");
              total += read[1][k];
              end = hi;
            }
            assertEquals(count - ownSize, total, n + " ranks, " + count + ": rank " + r);
          }
        }
      }
    }
  }

  @Test
  void plansWhosePeersReadEverythingOrThatSendCopyTheWholeInput() {
    Topology one = Topology.uniform(1, 4);
    Plan oneShot = OneShot.allReduce(one, DataType.F32, 1001, PlanConfig.DEFAULT);
    assertNull(PlanRunner.directInput(oneShot, 1, PlanRunner.directOutput(oneShot, 1)));
    Plan across = Hierarchical.allReduce(Topology.uniform(2, 2), DataType.F32, 1001,
        PlanConfig.DEFAULT);
    for (int r = 0; r < 4; r++) {
      assertNull(PlanRunner.directInput(across, r, null)); // message steps send from INPUT
    }
    Plan rs = TwoShot.reduceScatter(one, DataType.F32, 1001, PlanConfig.DEFAULT);
    assertNull(PlanRunner.directInput(rs, 0, null)); // not an allreduce
  }
}

package io.treeline.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.treeline.core.DataType;
import io.treeline.plan.Hierarchical;
import io.treeline.plan.OneShot;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import io.treeline.plan.TwoShot;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which plan steps may write the caller's output buffer (PlanRunner's direct all-gather). */
class DirectOutputTest {
  @Test
  void twoShotGathersEveryPeersSliceStraightOutAndKeepsItsOwnInTheSegment() {
    for (int n : new int[] {2, 3, 4, 8}) {
      for (long count : new long[] {1, 7, 1001, 65537}) {
        for (PlanConfig cfg : new PlanConfig[] {PlanConfig.DEFAULT,
            PlanConfig.DEFAULT.withPeerChunkBytes(4096)}) {
          Plan p = TwoShot.allReduce(Topology.uniform(1, n), DataType.F32, count, cfg);
          for (int r = 0; r < n; r++) {
            boolean[] direct = PlanRunner.directOutput(p, r);
            List<Step> steps = p.steps(r);
            if (steps.stream().noneMatch(s -> s instanceof Step.CopyFrom && s.count() > 0)) {
              assertNull(direct, "nothing to gather (tiny message), so no direct path");
              continue;
            }
            assertNotNull(direct, n + " ranks, " + count + ": rank " + r);
            long gathered = 0;
            long own = 0;
            for (int i = 0; i < steps.size(); i++) {
              Step s = steps.get(i);
              // every peer reads this rank's reduced slice: it must stay in the segment
              assertEquals(s instanceof Step.CopyFrom && s.count() > 0, direct[i], s.toString());
              gathered += direct[i] ? s.count() : 0;
              own += s instanceof Step.ReduceFrom ? s.count() : 0;
            }
            assertEquals(count, gathered + own, n + " ranks, " + count + ": rank " + r);
          }
        }
      }
    }
  }

  @Test
  void plansWithoutAGatherOrWithMessagesKeepTheCopyOut() {
    Topology one = Topology.uniform(1, 4);
    assertNull(PlanRunner.directOutput(OneShot.allReduce(one, DataType.F32, 1001,
        PlanConfig.DEFAULT), 1)); // reduces into its OUTPUT; nothing gathered
    Plan across = Hierarchical.allReduce(Topology.uniform(2, 2), DataType.F32, 1001,
        PlanConfig.DEFAULT);
    for (int r = 0; r < 4; r++) {
      assertNull(PlanRunner.directOutput(across, r)); // message steps read OUTPUT to send it
    }
    assertNull(PlanRunner.directOutput(TwoShot.reduceScatter(one, DataType.F32, 1001,
        PlanConfig.DEFAULT), 0)); // not an allreduce
  }
}

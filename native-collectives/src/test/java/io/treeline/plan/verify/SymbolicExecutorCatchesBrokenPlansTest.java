package io.treeline.plan.verify;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Buf;
import io.treeline.plan.Collective;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/** Each test breaks a correct plan in one way and expects the executor to name the fault. */
class SymbolicExecutorCatchesBrokenPlansTest {
  private static final Topology ONE_NODE = Topology.uniform(1, 4);

  /** {@code p} with {@code change} applied to rank {@code rank}'s steps (every rank's at -1). */
  static Plan edit(Plan p, int rank, java.util.function.Consumer<List<Step>> change) {
    List<List<Step>> all = new ArrayList<>();
    for (int r = 0; r < p.size(); r++) {
      List<Step> s = new ArrayList<>(p.steps(r));
      if (r == rank || rank < 0) {
        change.accept(s);
      }
      all.add(s);
    }
    return new Plan(p.collective(), p.algorithm() + "-broken", p.topology(), p.type(), p.count(),
        p.root(), p.config(), all, p.trees(), p.lanes());
  }

  /** Expects a failure whose message contains one of the fragments. */
  static void expect(Plan broken, String... fragments) {
    PlanVerificationException e = assertThrows(PlanVerificationException.class,
        () -> SymbolicExecutor.verify(broken));
    boolean named = false;
    for (String f : fragments) {
      named |= e.getMessage().contains(f);
    }
    assertTrue(named, e.getMessage());
  }

  private static Plan oneShot() {
    return Algorithm.ONESHOT.allReduce(ONE_NODE, DataType.F32, 1000, PlanConfig.DEFAULT);
  }

  @Test
  void readingPeersBeforeTheyEnterIsARace() {
    // drop rank 1's waits before its reduce: it may read INPUTs that are not ready yet
    expect(edit(oneShot(), 1, s -> s.removeIf(x -> x instanceof Step.Wait w && w.phase() == 1)),
        "before rank");
  }

  @Test
  void leavingWhilePeersStillReadIsCaught() {
    expect(edit(oneShot(), 2, s -> s.removeIf(x -> x instanceof Step.Wait w && w.phase() == 2)),
        "needs a barrier at the end");
  }

  private static Plan released() {
    return io.treeline.plan.OneShot.allReduceReleased(ONE_NODE, DataType.F32, 1000,
        PlanConfig.DEFAULT);
  }

  @Test
  void theReleasedOneShotIsProvenAndReleasesAtPhase2() {
    SymbolicExecutor.verify(released());
    for (int r = 0; r < 4; r++) {
      org.junit.jupiter.api.Assertions.assertEquals(2, released().releasePhase(r));
      org.junit.jupiter.api.Assertions.assertEquals(0, oneShot().releasePhase(r));
    }
  }

  @Test
  void aReleaseSomeRanksDoNotMakeIsNoRelease() {
    // rank 3 ends with a wait, so the node has no common release: the others must barrier
    Plan p = edit(released(), 3, s -> s.add(new Step.Wait(0, 2)));
    org.junit.jupiter.api.Assertions.assertEquals(0, p.releasePhase(0));
    expect(p, "needs a barrier at the end");
  }

  @Test
  void twoShotGatheringBeforeTheSliceIsFinalIsCaught() {
    Plan p = Algorithm.TWOSHOT.allReduce(ONE_NODE, DataType.F32, 1000, PlanConfig.DEFAULT);
    // Depending on the interleaving the executor meets the read before or after the owner's
    // unsynchronised write; both are the same race.
    expect(edit(p, 0, s -> s.removeIf(x -> x instanceof Step.Wait w && w.phase() == 2)),
        "signalled that it is complete", "before anything was written");
  }

  @Test
  void countingAContributionTwiceIsCaught() {
    Plan p = Algorithm.ONESHOT.allReduce(ONE_NODE, DataType.F32, 1000, PlanConfig.DEFAULT);
    expect(edit(p, 3, s -> s.replaceAll(x -> x instanceof Step.ReduceFrom rf
        ? new Step.ReduceFrom(new int[] {0, 1, 2, 3, 3}, rf.buf(), rf.offset(), rf.count(), true)
        : x)), "twice");
  }

  @Test
  void aMissingContributionIsCaught() {
    Plan p = Algorithm.ONESHOT.allReduce(ONE_NODE, DataType.F32, 1000, PlanConfig.DEFAULT);
    expect(edit(p, 3, s -> s.replaceAll(x -> x instanceof Step.ReduceFrom rf
        ? new Step.ReduceFrom(new int[] {0, 1, 3}, rf.buf(), rf.offset(), rf.count(), true)
        : x)), "missing the contribution of rank(s) 2");
  }

  @Test
  void aValueNeverFinishedIsCaughtBecauseAnAvgWouldNotBeDivided() {
    Plan p = Algorithm.RING.allReduce(Topology.uniform(2, 2), DataType.F32, 1000,
        PlanConfig.DEFAULT);
    expect(edit(p, -1, s -> s.replaceAll(x -> x instanceof Step.RecvReduce rr
        ? new Step.RecvReduce(rr.peer(), rr.lane(), rr.acc(), rr.offset(), rr.count(), false)
        : x)), "never finished");
  }

  @Test
  void receivesBeforeSendsOnBothSidesDeadlock() {
    Topology two = Topology.uniform(2, 1);
    List<List<Step>> steps = List.of(
        List.of(new Step.RecvCopy(1, 0, 0, 10), new Step.Send(1, 0, Buf.INPUT, 0, 10)),
        List.of(new Step.RecvCopy(0, 0, 0, 10), new Step.Send(0, 0, Buf.INPUT, 0, 10)));
    expect(new Plan(Collective.ALL_REDUCE, "deadlock", two, DataType.F32, 10, -1,
        PlanConfig.DEFAULT, steps, List.of(), 1), "deadlock: 2 of 2 ranks");
  }

  @Test
  void tooManySendsIntoOneMessageChannelsDeadlock() {
    // rank 0 sends twice before receiving, rank 1 too: fine with 2 slots, stuck with 1
    Topology two = Topology.uniform(2, 1);
    List<Step> a = List.of(new Step.Send(1, 0, Buf.INPUT, 0, 5),
        new Step.Send(1, 0, Buf.INPUT, 5, 5), new Step.RecvCopy(1, 0, 0, 5),
        new Step.RecvCopy(1, 0, 5, 5));
    List<Step> b = List.of(new Step.Send(0, 0, Buf.INPUT, 0, 5),
        new Step.Send(0, 0, Buf.INPUT, 5, 5), new Step.RecvCopy(0, 0, 0, 5),
        new Step.RecvCopy(0, 0, 5, 5));
    Plan p = new Plan(Collective.BROADCAST, "exchange", two, DataType.F32, 10, 0,
        PlanConfig.DEFAULT, List.of(a, b), List.of(), 1);
    expect(p, "deadlock");
  }

  @Test
  void aReceiveNamingOtherElementsThanTheSendIsCaught() {
    Plan p = Algorithm.DBT.allReduce(Topology.uniform(3, 1), DataType.F32, 1000,
        PlanConfig.DEFAULT);
    Predicate<Step> firstRecv = x -> x instanceof Step.RecvCopy;
    expect(edit(p, 2, s -> {
      for (int i = 0; i < s.size(); i++) {
        if (firstRecv.test(s.get(i))) {
          Step.RecvCopy rc = (Step.RecvCopy) s.get(i);
          s.set(i, new Step.RecvCopy(rc.peer(), rc.lane(), rc.offset() + 1, rc.count() - 1));
          return;
        }
      }
    }), "expects elements");
  }

  @Test
  void aSendThatIsNeverReceivedIsCaught() {
    Plan p = Algorithm.RING.allReduce(Topology.uniform(1, 3), DataType.F32, 99,
        PlanConfig.DEFAULT);
    expect(edit(p, 0, s -> s.add(new Step.Send(1, 0, Buf.OUTPUT, 0, 1))),
        "never received");
  }

  @Test
  void aWrittenButUnsignalledRegionIsARaceWhateverTheInterleaving() {
    // rank 0 writes its OUTPUT first; rank 1 reads it without waiting for rank 0's signal
    Topology two = Topology.uniform(1, 2);
    List<Step> a = List.of(new Step.Copy(0, 8, true), new Step.Signal(1), new Step.Wait(1, 1));
    List<Step> b = List.of(new Step.Signal(1), new Step.CopyFrom(0, Buf.OUTPUT, 0, 8),
        new Step.Wait(0, 1));
    expect(new Plan(Collective.BROADCAST, "race", two, DataType.F32, 8, 0, PlanConfig.DEFAULT,
        List.of(a, b), List.of(), 0), "before rank 0 signalled that it is complete");
  }
}

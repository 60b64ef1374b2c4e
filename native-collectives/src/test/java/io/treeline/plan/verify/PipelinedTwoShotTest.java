package io.treeline.plan.verify;

import static io.treeline.plan.verify.SymbolicExecutorCatchesBrokenPlansTest.edit;
import static io.treeline.plan.verify.SymbolicExecutorCatchesBrokenPlansTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import io.treeline.plan.TwoShot;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Two-shot with its reduce-scatter and all-gather pipelined in chunks
 * ({@link PlanConfig#peerChunkBytes()}), proven by the symbolic executor on every rank count of
 * a node and on odd sizes, and broken on purpose to show the proof can fail.
 */
class PipelinedTwoShotTest {
  /** 256-byte chunks, so that small messages already cut every slice into several chunks. */
  private static final PlanConfig PIPELINED = PlanConfig.DEFAULT.withPeerChunkBytes(256);

  @Test
  void everyRankCountAndOddSizeIsCorrect() {
    int plans = 0;
    for (int n = 1; n <= 16; n++) {
      for (long count : new long[] {0, 1, 2, 17, 63, 64, 65, 257, 1021, 4099, 65537}) {
        for (DataType t : new DataType[] {DataType.F32, DataType.BF16, DataType.F64}) {
          Plan p = TwoShot.allReduce(Topology.uniform(1, n), t, count, PIPELINED);
          SymbolicExecutor.verify(p);
          plans++;
        }
      }
    }
    assertEquals(16 * 11 * 3, plans);
  }

  @Test
  void largeSlicesUseEveryChunkAndTheLastPhase() {
    Topology topo = Topology.uniform(1, 4);
    Plan p = TwoShot.allReduce(topo, DataType.F32, 4099 * 16, PIPELINED);
    assertEquals(TwoShot.MAX_CHUNKS, TwoShot.chunks(4, DataType.F32, 4099 * 16, PIPELINED));
    int maxPhase = 0;
    int reduces = 0;
    for (Step s : p.steps(1)) {
      if (s instanceof Step.Signal sg) {
        maxPhase = Math.max(maxPhase, sg.phase());
      }
      reduces += s instanceof Step.ReduceFrom ? 1 : 0;
    }
    assertEquals(Step.MAX_PHASE, maxPhase);
    assertEquals(TwoShot.MAX_CHUNKS, reduces);
    SymbolicExecutor.verify(p);
  }

  @Test
  void withoutPeerChunksThePlanIsTheWholePhaseOne() {
    Topology topo = Topology.uniform(1, 4);
    Plan whole = TwoShot.allReduce(topo, DataType.F32, 1 << 20, PlanConfig.DEFAULT);
    Plan hier = Algorithm.HIERARCHICAL.allReduce(topo, DataType.F32, 1 << 20, PlanConfig.DEFAULT);
    assertEquals(hier.steps(), whole.steps());
    // a message whose slices fit one chunk is not cut either
    Plan small = TwoShot.allReduce(topo, DataType.F32, 1000, PlanConfig.DEFAULT
        .withPeerChunkBytes(1 << 20));
    assertEquals(TwoShot.allReduce(topo, DataType.F32, 1000, PlanConfig.DEFAULT).steps(),
        small.steps());
  }

  @Test
  void copyingAChunkBeforeItsOwnerSignalledItIsCaught() {
    Plan p = TwoShot.allReduce(Topology.uniform(1, 4), DataType.F32, 5003, PIPELINED);
    // rank 0 stops waiting for chunk 2 of its peers: it may copy it before it is final
    expect(edit(p, 0, s -> s.removeIf(x -> x instanceof Step.Wait w && w.phase() == 4)),
        "signalled that it is complete", "before anything was written");
  }

  @Test
  void signallingAChunkBeforeReducingItIsCaught() {
    Plan p = TwoShot.allReduce(Topology.uniform(1, 3), DataType.F32, 5003, PIPELINED);
    // rank 2 announces chunk 1 before reducing it: a peer may copy the partial slice
    expect(edit(p, 2, s -> {
      int sig = indexOf(s, x -> x instanceof Step.Signal g && g.phase() == 3);
      Step signal = s.remove(sig);
      int reduce = lastIndexBefore(s, sig, x -> x instanceof Step.ReduceFrom);
      s.add(reduce, signal);
    }), "signalled that it is complete", "before anything was written", "before rank");
  }

  @Test
  void aPhaseBeyondTheCallsFlagsIsRefused() {
    Plan p = TwoShot.allReduce(Topology.uniform(1, 2), DataType.F32, 5003, PIPELINED);
    List<List<Step>> all = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      List<Step> s = new ArrayList<>(p.steps(r));
      s.replaceAll(x -> x instanceof Step.Signal g && g.phase() == Step.MAX_PHASE
          ? new Step.Signal(Step.MAX_PHASE + 1) : x instanceof Step.Wait w
          && w.phase() == Step.MAX_PHASE ? new Step.Wait(w.peer(), Step.MAX_PHASE + 1) : x);
      all.add(s);
    }
    Plan broken = new Plan(p.collective(), "too-many-phases", p.topology(), p.type(), p.count(),
        -1, p.config(), all, p.trees(), p.lanes());
    expect(broken, "outside 1..7");
    assertTrue(TwoShot.MAX_CHUNKS + 2 <= Step.MAX_PHASE);
  }

  private static int indexOf(List<Step> s, java.util.function.Predicate<Step> f) {
    for (int i = 0; i < s.size(); i++) {
      if (f.test(s.get(i))) {
        return i;
      }
    }
    throw new AssertionError("no such step");
  }

  private static int lastIndexBefore(List<Step> s, int end, java.util.function.Predicate<Step> f) {
    for (int i = end - 1; i >= 0; i--) {
      if (f.test(s.get(i))) {
        return i;
      }
    }
    throw new AssertionError("no such step");
  }
}

package io.treeline.plan.verify;

import static io.treeline.plan.verify.SymbolicExecutorCatchesBrokenPlansTest.edit;
import static io.treeline.plan.verify.SymbolicExecutorCatchesBrokenPlansTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.plan.Buf;
import io.treeline.plan.DoubleBinaryTree;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.StagedHierarchical;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The GPU path's allreduce across nodes as a plan: proven by the symbolic executor on the same
 * node counts as the host tree plans (every count to 64, a sample to 1024) times 1..8 GPUs per
 * node, and shown to cross the network exactly as the host double binary tree of each slice's
 * owners does (the GPU path runs the plan's own steps: {@code comm.StagedAcrossNodesTest}).
 */
class StagedHierarchicalTest {
  /** 1 KiB tree chunks and 1.5 KiB stage chunks of f32: several of each per slice. */
  private static final PlanConfig CHUNKS = PlanConfig.DEFAULT.withChunkBytes(1024);
  private static final long STAGE = 1536;
  /** The sweep's: 4 KiB tree chunks (as the host sweep) and 6 KiB stage chunks. */
  private static final PlanConfig SWEEP_CHUNKS = PlanConfig.DEFAULT.withChunkBytes(4096);
  private static final long SWEEP_STAGE = 6144;

  @Test
  void provenOnEveryNodeCountTo64AndASampleTo1024TimesOneToEightGpus() {
    long t0 = System.nanoTime();
    int plans = 0;
    long steps = 0;
    long stageSteps = 0;
    for (int nodes : SymbolicSweepTest.nodeCounts()) {
      for (int g = 1; g <= 8; g++) {
        Topology topo = Topology.uniform(nodes, g);
        long count = nodes * g > 256 ? 2053 : 5003;
        Plan p = StagedHierarchical.allReduce(topo, DataType.F32, count, SWEEP_CHUNKS,
            SWEEP_STAGE);
        Verification v = SymbolicExecutor.verify(p);
        plans++;
        steps += v.steps();
        for (int r = 0; r < p.size(); r++) {
          for (Step s : p.steps(r)) {
            stageSteps += s instanceof Step.StageOut || s instanceof Step.StageIn ? 1 : 0;
          }
        }
        if (nodes > 1) {
          // the inter-node work is spread over the GPUs: 2x the message / GPUs per node
          long bytes = count * 4;
          long slack = 64L * 2 * g;
          assertTrue(v.maxRankInterSent() <= 2 * bytes / g + slack, topo + ": a rank sent "
              + v.maxRankInterSent());
          assertTrue(v.maxNodeInterSent() <= 2 * bytes + slack, topo + ": a node sent "
              + v.maxNodeInterSent());
        }
      }
    }
    assertEquals(SymbolicSweepTest.nodeCounts().size() * 8, plans);
    System.out.printf("symbolic sweep: %d staged GPU plans (%d node counts x 1..8 GPUs), %d "
        + "steps (%d stage copies), %.1f s%n", plans, SymbolicSweepTest.nodeCounts().size(),
        steps, stageSteps, (System.nanoTime() - t0) / 1e9);
  }

  @Test
  void oddSizesTypesAndUnevenNodes() {
    long[] sizes = {0, 1, 2, 3, 5, 13, 31, 127, 1021, 4099, 65521};
    Topology[] topos = {Topology.uniform(1, 1), Topology.uniform(1, 4), Topology.uniform(2, 1),
        Topology.uniform(2, 2), Topology.uniform(3, 2), Topology.uniform(5, 3),
        Topology.uniform(7, 8), Topology.of(3, 1, 2), Topology.of(1, 4, 4, 2, 3)};
    for (Topology topo : topos) {
      for (long count : sizes) {
        for (DataType type : new DataType[] {DataType.F32, DataType.F64, DataType.BF16,
            DataType.U8}) {
          SymbolicExecutor.verify(StagedHierarchical.allReduce(topo, type, count, CHUNKS,
              STAGE));
          SymbolicExecutor.verify(StagedHierarchical.allReduce(topo, type, count,
              PlanConfig.DEFAULT, StagedHierarchical.DEFAULT_STAGE_CHUNK_BYTES));
        }
      }
    }
  }

  /**
   * For every rank, slice and stage chunk, the message steps between the chunk's stage-out and
   * stage-in are the double binary tree allreduce of one rank per node on that chunk, with the
   * rank's owners for peers, the slice's lanes, STAGE for INPUT and OUTPUT, and no finish (the
   * GPU divides after the copy back).
   */
  @Test
  void eachStageChunkCrossesTheNetworkAsTheHostTreeOfTheSlicesOwners() {
    for (int nodes : new int[] {2, 3, 4, 5, 9, 16}) {
      for (int g : new int[] {1, 2, 3, 8}) {
        Topology topo = Topology.uniform(nodes, g);
        long count = 40_009;
        Plan p = StagedHierarchical.allReduce(topo, DataType.F32, count, CHUNKS, STAGE);
        Topology across = Topology.uniform(nodes, 1);
        for (int r = 0; r < p.size(); r++) {
          int l = topo.localRank(r);
          List<Step> msgs = new ArrayList<>();
          List<long[]> chunks = new ArrayList<>();
          for (Step s : p.steps(r)) {
            if (s instanceof Step.StageIn in) {
              chunks.add(new long[] {in.offset(), in.count()});
              assertTree(p.topology(), across, r, l, in.offset(), in.count(), msgs);
              msgs.clear();
            } else if (s instanceof Step.Send || s instanceof Step.RecvReduce
                || s instanceof Step.RecvCopy) {
              msgs.add(s);
            }
          }
          assertTrue(msgs.isEmpty(), "messages after the last stage-in on rank " + r);
          long staged = chunks.stream().mapToLong(c -> c[1]).sum();
          long slice = io.treeline.plan.Slices.size(count, g, l, CHUNKS.alignElements(4));
          assertEquals(slice, staged, "rank " + r + " stages its whole slice");
        }
      }
    }
  }

  private static void assertTree(Topology topo, Topology across, int rank, int local, long lo,
      long n, List<Step> got) {
    Plan tree = DoubleBinaryTree.allReduce(across, DataType.F32, n, CHUNKS);
    List<Step> want = new ArrayList<>();
    for (Step s : tree.steps(topo.node(rank))) {
      if (s instanceof Step.Send x) {
        want.add(new Step.Send(topo.rank(x.peer(), local), 2 * local + x.lane(), Buf.STAGE,
            lo + x.offset(), x.count()));
      } else if (s instanceof Step.RecvReduce x) {
        want.add(new Step.RecvReduce(topo.rank(x.peer(), local), 2 * local + x.lane(),
            Buf.STAGE, lo + x.offset(), x.count(), false));
      } else if (s instanceof Step.RecvCopy x) {
        want.add(new Step.RecvCopy(topo.rank(x.peer(), local), 2 * local + x.lane(),
            Buf.STAGE, lo + x.offset(), x.count()));
      } else {
        throw new AssertionError("a one-rank-per-node tree of " + across.nodes()
            + " nodes has " + s);
      }
    }
    assertEquals(want, got, "rank " + rank + " chunk [" + lo + ", " + (lo + n) + ")");
  }

  // ---- broken on purpose ---------------------------------------------------------------------

  private static Plan staged() {
    return StagedHierarchical.allReduce(Topology.uniform(3, 2), DataType.F32, 10_007, CHUNKS,
        STAGE);
  }

  @Test
  void aChunkNeverCopiedBackLeavesThePartialSumOnTheGpu() {
    expect(edit(staged(), 2, s -> {
      s.removeIf(x -> x instanceof Step.StageIn);
    }), "missing the contribution");
  }

  @Test
  void aCopyBackThatDoesNotFinishWouldNotDivideAnAverage() {
    expect(edit(staged(), 4, s -> {
      s.replaceAll(x -> x instanceof Step.StageIn in
          ? new Step.StageIn(in.offset(), in.count(), false) : x);
    }), "never finished");
  }

  @Test
  void sendingBeforeStagingOutReadsAnEmptyHostBuffer() {
    expect(edit(staged(), 0, s -> {
      s.removeIf(x -> x instanceof Step.StageOut);
    }), "before anything was written");
  }

  @Test
  void aPeersHostCopyIsNotPeerMemory() {
    expect(edit(staged(), 1, s -> {
      s.replaceAll(x -> x instanceof Step.CopyFrom cf
          ? new Step.CopyFrom(cf.peer(), Buf.STAGE, cf.offset(), cf.count()) : x);
    }), "not peer memory");
  }

  @Test
  void gatheringBeforeTheCopyBackIsARace() {
    // move rank 0's stage-ins after its all-gather barrier: peers read its slice too early
    expect(edit(staged(), 0, s -> {
      List<Step> ins = new ArrayList<>();
      s.removeIf(x -> x instanceof Step.StageIn && ins.add(x));
      s.addAll(s.size() - 2, ins);
    }), "before rank 0 signalled that it is complete", "overwrites OUTPUT",
        "missing the contribution", "never finished");
  }
}

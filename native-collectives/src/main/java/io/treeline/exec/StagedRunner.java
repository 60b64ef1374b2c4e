package io.treeline.exec;

import io.treeline.core.ReduceOp;
import io.treeline.plan.Plan;
import io.treeline.plan.Step;
import io.treeline.reduce.Reducer;
import java.util.List;

/**
 * Runs the staged part of one rank's steps of a staged plan ({@code plan.StagedHierarchical},
 * the GPU path across nodes): its {@code StageOut} and {@code StageIn} steps through a
 * {@link HostStaging} (the copies between the device OUTPUT and pinned host memory), and the
 * message steps between them over a {@link NetworkLink}, on the STAGE buffer, with the same
 * code as {@link PlanRunner} runs host plans' message steps. The steps run are the plan's, in
 * the plan's order: what the symbolic executor proved is what crosses the network.
 *
 * <p>The overlap is the plan's order read with asynchronous copies: the plan stages every chunk
 * out first (the copies are enqueued at once and run back to back), then for each chunk runs its
 * tree and stages it in; the runner waits for a chunk to land only before that chunk's first
 * message step, so the network carries chunk c while the copy engine brings chunk c + 1, and
 * chunk c's copy back runs while chunk c + 1 crosses.
 *
 * <p>Peers: the plan names ranks of the whole staged topology; {@code linkPeer[p]} is the
 * link's number for plan rank {@code p} (the slice owners' communicator numbers them its own
 * way). One per rank; a run allocates nothing but the call's descriptor.
 */
public final class StagedRunner {
  private final NetworkLink network;
  private final MessageSteps messages;
  private final PeerWatch watch;
  private final int linkRank;
  private final java.util.IdentityHashMap<Plan, String> phases = new java.util.IdentityHashMap<>();

  /**
   * @param linkRank this rank as the link numbers it (named in errors)
   * @param watch the link's view of its group (null: none), told which call this rank is in
   */
  public StagedRunner(NetworkLink network, Reducer reducer, int linkRank, PeerWatch watch) {
    this.network = network;
    this.messages = new MessageSteps(network, reducer, linkRank);
    this.watch = watch;
    this.linkRank = linkRank;
  }

  /**
   * Steps {@code [from, to)} of {@code rank}'s steps of {@code plan}, which must be stage and
   * message steps only, as collective {@code sequence} of the link: its descriptor is the whole
   * plan's ({@link CallDescriptor#of}), so that a peer making another call fails on receipt.
   * STAGE byte 0 is the first staged element. Blocks until the last message step is done and
   * the last stage-in issued, or fails at {@code deadline}.
   */
  public void run(Plan plan, int rank, int from, int to, int[] linkPeer, HostStaging stage,
      long sequence, ReduceOp op, long deadline) {
    List<Step> steps = plan.steps(rank);
    int es = plan.type().size();
    int chunks = 0;
    long first = Long.MAX_VALUE;
    long end = Long.MIN_VALUE;
    for (int i = from; i < to; i++) {
      Step s = steps.get(i);
      if (s instanceof Step.StageOut o) {
        chunks++;
        first = Math.min(first, o.offset());
        end = Math.max(end, o.offset() + o.count());
      } else if (!(s instanceof Step.StageIn) && !MessageSteps.isMessage(s)) {
        throw new IllegalArgumentException("rank " + rank + ": step " + i + " of "
            + plan.algorithm() + " (" + s + ") is neither a stage nor a message step; the "
            + "staged part runs only those");
      }
    }
    if (watch != null) {
      watch.beginCall(sequence, plan.algorithm());
    }
    network.beginCall(sequence, CallDescriptor.of(plan, op));
    if (chunks == 0) {
      if (watch != null) {
        watch.endCall();
      }
      return;
    }
    stage.begin(chunks, (end - first) * es);
    long base = -first * es;
    String phase = phase(plan);
    int outs = 0;
    int ins = 0;
    int landed = 0;
    for (int i = from; i < to; i++) {
      Step s = steps.get(i);
      if (s instanceof Step.StageOut o) {
        stage.stageOut(outs++, o.offset(), o.count(), base + o.offset() * es);
        continue;
      }
      if (landed <= ins) { // chunk `ins` is the one these steps work on
        if (ins >= outs) {
          throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm()
              + " works on stage chunk " + ins + " before staging it out (step " + i + ")");
        }
        network.flush(deadline, phase); // the GPU's copy is a wait too
        stage.awaitStaged(ins, deadline);
        landed = ins + 1;
      }
      if (s instanceof Step.StageIn x) {
        stage.stageIn(ins++, x.offset(), x.count(), base + x.offset() * es, x.finish());
      } else {
        if (FaultInjection.ON) {
          FaultInjection.at("network", linkRank, sequence);
        }
        int peer = MessageSteps.peer(s);
        int link = peer >= 0 && peer < linkPeer.length ? linkPeer[peer] : -1;
        if (link < 0) {
          throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm()
              + " step " + i + " (" + s + ") names plan rank " + peer + ", which is not in "
              + "this rank's group across nodes");
        }
        messages.run(s, link, null, null, stage.buffer(), base + s.offset() * es, plan.type(),
            op, plan.size(), deadline, phase);
      }
    }
    network.flush(deadline, phase); // the device steps after this part wait on local peers
    if (watch != null) {
      watch.endCall();
    }
  }

  /**
   * The staged part of one rank's steps of a staged plan, {@code {from, to}}: from its first
   * {@code StageOut} to just after its last {@code StageIn}; {@code {size, size}} when it has
   * none (a rank whose slice is empty). Steps before it and after it are device steps.
   */
  public static int[] stagedPart(List<Step> steps) {
    int from = steps.size();
    int to = 0;
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      if (s instanceof Step.StageOut) {
        from = Math.min(from, i);
      } else if (s instanceof Step.StageIn) {
        to = i + 1;
      }
    }
    return from < to ? new int[] {from, to} : new int[] {steps.size(), steps.size()};
  }

  private String phase(Plan plan) {
    String p = phases.get(plan);
    if (p == null) {
      if (phases.size() > 512) {
        phases.clear(); // the communicator's plan cache is bounded too
      }
      p = plan.algorithm() + "/network";
      phases.put(plan, p);
    }
    return p;
  }
}

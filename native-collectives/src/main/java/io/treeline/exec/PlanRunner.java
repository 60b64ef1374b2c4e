package io.treeline.exec;

import io.treeline.core.ReduceOp;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.Step;
import io.treeline.reduce.HostReducer;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

/**
 * Executes one rank's steps of a plan on real bytes, over a {@link RankTransport}, with the
 * host reducer. One per rank; after construction a run allocates nothing.
 *
 * <p>Flags carry {@code sequence * PHASES + phase}, so that they only grow across the
 * collectives of a communicator and a late peer can never be mistaken for an early one.
 */
public final class PlanRunner {
  /** Phases a plan may use per collective (Step.Signal phases 1..PHASES-1). */
  public static final int PHASES = 8;

  private final RankTransport transport;
  private final HostReducer reducer = new HostReducer();
  private final ByteBuffer[] peerBufs;
  private final long[] peerOffsets;

  public PlanRunner(RankTransport transport, int maxLocalRanks) {
    this.transport = transport;
    this.peerBufs = new ByteBuffer[maxLocalRanks];
    this.peerOffsets = new long[maxLocalRanks];
  }

  /**
   * Run {@code plan}'s steps for this rank. {@code input} and {@code output} hold
   * {@code plan.count()} elements from index 0, in native order; they must not overlap.
   */
  public void run(Plan plan, long sequence, ByteBuffer input, ByteBuffer output, ReduceOp op,
      Duration timeout) {
    int rank = transport.rank();
    List<Step> steps = plan.steps(rank);
    int es = plan.type().size();
    int divisor = plan.size();
    long deadline = System.nanoTime() + timeout.toNanos();
    long flagBase = sequence * PHASES;
    transport.beginCall(sequence, CallDescriptor.of(plan, op));
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      long off = s.offset() * es;
      long bytes = s.count() * es;
      if (s instanceof Step.Send x) {
        transport.send(x.peer(), x.lane(), x.src() == Buf.INPUT ? input : output, off, bytes,
            deadline, plan.algorithm());
      } else if (s instanceof Step.RecvReduce x) {
        ByteBuffer msg = transport.receive(x.peer(), x.lane(), bytes, deadline,
            plan.algorithm());
        reducer.reduce2(plan.type(), op, x.acc() == Buf.INPUT ? input : output, off, msg, 0,
            output, off, s.count(), x.finish(), divisor);
        transport.release(x.peer(), x.lane());
      } else if (s instanceof Step.RecvCopy x) {
        ByteBuffer msg = transport.receive(x.peer(), x.lane(), bytes, deadline,
            plan.algorithm());
        reducer.copy(plan.type(), op, msg, 0, output, off, s.count(), false, divisor);
        transport.release(x.peer(), x.lane());
      } else if (s instanceof Step.Copy x) {
        reducer.copy(plan.type(), op, input, off, output, off, s.count(), x.finish(), divisor);
      } else if (s instanceof Step.Signal x) {
        transport.signal(flagBase + x.phase());
      } else if (s instanceof Step.Wait x) {
        transport.await(x.peer(), flagBase + x.phase(), deadline, plan.algorithm());
      } else if (s instanceof Step.ReduceFrom x) {
        int[] peers = x.peers();
        for (int k = 0; k < peers.length; k++) {
          peerBufs[k] = peers[k] == rank ? (x.buf() == Buf.INPUT ? input : output)
              : transport.peerBuffer(peers[k], x.buf());
          peerOffsets[k] = off;
        }
        reducer.reduce(plan.type(), op, peerBufs, peerOffsets, peers.length, output, off,
            s.count(), x.finish(), divisor);
        java.util.Arrays.fill(peerBufs, 0, peers.length, null);
      } else if (s instanceof Step.CopyFrom x) {
        reducer.copy(plan.type(), op, transport.peerBuffer(x.peer(), x.buf()), off, output, off,
            s.count(), false, divisor);
      } else {
        throw new AssertionError(s);
      }
    }
  }
}

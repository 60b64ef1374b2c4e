package io.treeline.exec;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.Step;
import io.treeline.reduce.Reducer;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

/**
 * Executes one rank's steps of a plan on host memory: peer-memory steps ({@code ReduceFrom},
 * {@code CopyFrom}, {@code Signal}, {@code Wait}) over a {@link HostPeerMemory}, message steps
 * ({@code Send}, {@code RecvReduce}, {@code RecvCopy}) over a {@link NetworkLink} (as
 * {@link StagedRunner} runs a GPU plan's, the same code), arithmetic with a {@link Reducer}. The runner knows no transport: shared memory and TCP, threads of
 * one JVM, or a future RDMA link all plug in below it. One per rank; after construction a run
 * allocates nothing.
 *
 * <p>The plan's buffers are this rank's registered INPUT and OUTPUT of the peer memory, from
 * byte {@code base}: a caller whose data already sits in the registered buffers (a gradient
 * bucket placed there) runs in place, others copy in and out around {@link #run}.
 *
 * <p>Flags carry {@code sequence * PHASES + phase}, so that they only grow across the
 * collectives of a communicator and a late peer can never be mistaken for an early one.
 */
public final class PlanRunner implements AutoCloseable {
  /** Phases a plan may use per collective (Step.Signal phases 1..PHASES-1). */
  public static final int PHASES = Step.MAX_PHASE + 1;

  private final HostPeerMemory memory;
  private final NetworkLink network;
  private final int rank;
  private final MessageSteps messages;
  private final ByteBuffer[] peerBufs;
  private final PeerWatch watch;
  private final ReduceThreads threads;
  private final java.util.IdentityHashMap<Plan, PlanFacts> facts =
      new java.util.IdentityHashMap<>();
  /** The last plan run and its facts: a loop of equal calls skips the map. */
  private Plan lastPlan;
  private PlanFacts lastFacts;
  /** The flag every {@link #pendingPeers} must reach before this rank's buffers are written. */
  private long pendingRelease;
  private int[] pendingPeers;
  private String pendingPhase;

  /**
   * @param rank this rank in plan numbering (node-major)
   * @param maxLocalRanks the most ranks of one node, bounding a {@code ReduceFrom}'s inputs
   */
  public PlanRunner(HostPeerMemory memory, NetworkLink network, int rank, int maxLocalRanks,
      Reducer reducer) {
    this(memory, network, rank, maxLocalRanks, reducer, null);
  }

  /**
   * @param watch the rank's view of its group (null: none): told which call this rank is in,
   *     so that a hang report can say, and asked at the start of each call whether the group
   *     is still whole
   */
  public PlanRunner(HostPeerMemory memory, NetworkLink network, int rank, int maxLocalRanks,
      Reducer reducer, PeerWatch watch) {
    this(memory, network, rank, maxLocalRanks, reducer, watch, 1);
  }

  /**
   * @param reduceThreads threads for this rank's large peer-memory reduces and copies, its own
   *     included (1: all on the calling thread; see {@link ReduceThreads#forNode}); helpers are
   *     stopped by {@link #close()}
   */
  public PlanRunner(HostPeerMemory memory, NetworkLink network, int rank, int maxLocalRanks,
      Reducer reducer, PeerWatch watch, int reduceThreads) {
    this.threads = new ReduceThreads(rank, reduceThreads, Math.max(1, maxLocalRanks), reducer);
    this.watch = watch;
    this.memory = memory;
    this.network = network;
    this.rank = rank;
    this.messages = new MessageSteps(network, reducer, rank);
    this.peerBufs = new ByteBuffer[maxLocalRanks];
  }

  public int rank() {
    return rank;
  }

  /** Threads this rank's large reduces and copies use, its own included. */
  public int reduceThreads() {
    return threads.threads();
  }

  /**
   * {@code dst = src} over {@code count} elements of {@code type} at the byte offsets given,
   * shared among the reduce threads when large: the copy into and out of the registered buffers
   * around {@link #run}. Call it on the thread that calls {@link #run}.
   */
  public void copy(DataType type, ByteBuffer src, long srcOffset, ByteBuffer dst,
      long dstOffset, long count, Duration timeout) {
    threads.copy(type, src, srcOffset, dst, dstOffset, count,
        System.nanoTime() + timeout.toNanos(), timeout);
  }

  /** Stops the reduce threads; safe twice. */
  @Override
  public void close() {
    threads.close();
  }

  /**
   * Run {@code plan}'s steps for this rank on the registered buffers, elements from byte
   * {@code base} of each (every local rank passes the same base).
   */
  public void run(Plan plan, long sequence, long base, ReduceOp op, Duration timeout) {
    run(plan, sequence, base, op, timeout, null, 0);
  }

  /**
   * {@link #run}, and the result into {@code out} from byte {@code outOffset} when the plan
   * allows it without the copy out of the registered OUTPUT afterwards: the all-gather's copies
   * of peers' slices ({@code CopyFrom} regions of this rank's OUTPUT that no step of any rank
   * reads) go straight into {@code out}, and the regions this rank reduced itself are copied
   * there at the end. Returns false (nothing written to {@code out}) for plans where that does
   * not hold: the caller then copies the OUTPUT out as before. One pass over the gathered bytes
   * instead of two (two-shot: the copy out was a sixth of a call's traffic at 4 ranks).
   */
  public boolean run(Plan plan, long sequence, long base, ReduceOp op, Duration timeout,
      ByteBuffer out, long outOffset) {
    return run(plan, sequence, base, op, timeout, out, outOffset, null, 0);
  }

  /**
   * {@link #run(Plan, long, long, ReduceOp, Duration, ByteBuffer, long)}, and with {@code in}
   * (not null) this rank's own reads of its INPUT come from the caller's buffer {@code in} from
   * byte {@code inOffset} instead of the registered INPUT: the caller then copies into INPUT only
   * the regions the peers read ({@link #directInput}), and must pass {@code in} only for plans
   * where that is not null. Two-shot on k ranks: a rank's own slice, 1/k of the message, is
   * never copied in (half of the copy in at 2 ranks).
   */
  public boolean run(Plan plan, long sequence, long base, ReduceOp op, Duration timeout,
      ByteBuffer out, long outOffset, ByteBuffer in, long inOffset) {
    List<Step> steps = plan.steps(rank);
    int es = plan.type().size();
    int divisor = plan.size();
    long deadline = System.nanoTime() + timeout.toNanos();
    long flagBase = sequence * PHASES;
    awaitRelease(timeout);
    PlanFacts f = facts(plan);
    boolean[] direct = out != null ? f.direct : null;
    if (in != null && f.directInput == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm()
          + " reads this rank's INPUT in ways the caller's buffer cannot stand in for");
    }
    long shift = inOffset - base;
    String[] phase = f.phases;
    CallDescriptor call = f.calls[op.ordinal()];
    if (call == null) {
      call = f.calls[op.ordinal()] = CallDescriptor.of(plan, op);
    }
    if (watch != null) {
      watch.beginCall(sequence, plan.algorithm());
    }
    memory.beginCall(sequence, call);
    network.beginCall(sequence, call);
    ByteBuffer input = memory.buffer(rank, Buf.INPUT);
    ByteBuffer output = memory.buffer(rank, Buf.OUTPUT);
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      long off = base + s.offset() * es;
      if (FaultInjection.ON) { // the fault suite's hook; a constant false otherwise
        FaultInjection.at(MessageSteps.isMessage(s) ? "network" : s instanceof Step.Copy ? "none"
            : "intra", rank, sequence);
      }
      if (MessageSteps.isMessage(s)) {
        messages.run(s, MessageSteps.peer(s), input, output, null, off, plan.type(), op,
            divisor, deadline, phase[NETWORK]);
      } else if (s instanceof Step.Copy x) {
        peerBufs[0] = in != null ? in : input;
        threads.reduce(plan.type(), op, peerBufs, off, 1, output, s.count(), x.finish(),
            divisor, deadline, timeout, in != null ? 0 : -1, shift);
        peerBufs[0] = null;
      } else if (s instanceof Step.Signal x) {
        memory.signal(flagBase + x.phase());
      } else if (s instanceof Step.Wait x) {
        network.flush(deadline, phase[NETWORK]);
        memory.await(x.peer(), flagBase + x.phase(), deadline, phase[INTRA]);
      } else if (s instanceof Step.ReduceFrom x) {
        int[] peers = x.peers();
        int own = -1;
        for (int k = 0; k < peers.length; k++) {
          if (in != null && peers[k] == rank && x.buf() == Buf.INPUT) {
            own = k;
            peerBufs[k] = in;
          } else {
            peerBufs[k] = memory.buffer(peers[k], x.buf());
          }
        }
        threads.reduce(plan.type(), op, peerBufs, off, peers.length, output, s.count(),
            x.finish(), divisor, deadline, timeout, own, shift);
        java.util.Arrays.fill(peerBufs, 0, peers.length, null);
      } else if (s instanceof Step.CopyFrom x) {
        if (in != null && x.peer() == rank && x.buf() == Buf.INPUT) {
          throw new AssertionError("directInput admits no CopyFrom of the own INPUT");
        }
        if (direct != null && direct[i]) {
          threads.copy(plan.type(), memory.buffer(x.peer(), x.buf()), off, out,
              outOffset + s.offset() * es, s.count(), deadline, timeout);
          continue;
        }
        peerBufs[0] = memory.buffer(x.peer(), x.buf());
        threads.reduce(plan.type(), op, peerBufs, off, 1, output, s.count(), false, divisor,
            deadline, timeout);
        peerBufs[0] = null;
      } else {
        throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm() + " has "
            + s + ", a step of staged plans, which StagedRunner runs (the GPU path)");
      }
    }
    if (direct != null) {
      for (int k = 0; k < f.restOffset.length; k++) {
        threads.copy(plan.type(), output, base + f.restOffset[k] * es, out,
            outOffset + f.restOffset[k] * es, f.restCount[k], deadline, timeout);
      }
    }
    if (f.releasePhase > 0) {
      pendingRelease = flagBase + f.releasePhase;
      pendingPeers = f.localPeers;
      pendingPhase = phase[INTRA];
    }
    if (watch != null) {
      watch.endCall();
    }
    return direct != null;
  }

  /**
   * After a plan with a deferred release ({@link Plan#releasePhase}): wait until every local
   * peer has released this rank's buffers (read them for the last call), before anything writes
   * them. Done at the start of every run and copy; usually the peers released long before, and
   * this is one acquire load per peer. The caller that copies into the registered buffers calls
   * it first (copying out of them needs no release).
   */
  public void awaitRelease(Duration timeout) {
    if (pendingRelease == 0) {
      return;
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    int[] peers = pendingPeers;
    for (int k = 0; k < peers.length; k++) {
      memory.await(peers[k], pendingRelease, deadline, pendingPhase);
    }
    pendingRelease = 0;
  }

  private static final int INTRA = 0;
  private static final int NETWORK = 1;

  /**
   * What a run needs of a plan beyond its steps, made once per plan (a run allocates nothing):
   * the phase names its steps report, its call descriptor per op, its deferred release.
   */
  private static final class PlanFacts {
    final String[] phases;
    final CallDescriptor[] calls = new CallDescriptor[ReduceOp.values().length];
    final int releasePhase;
    final int[] localPeers;
    /**
     * Per step of this rank: a CopyFrom that may write the caller's output buffer; null when the
     * plan does not allow it ({@link #directOutput}).
     */
    final boolean[] direct;
    /** The other regions of this rank's OUTPUT the plan writes: copied out after the steps. */
    final long[] restOffset;
    final long[] restCount;
    /**
     * The regions of this rank's INPUT that other ranks read (ascending, disjoint), or null
     * where the caller's buffer may not stand in for INPUT ({@link #directInput}).
     */
    final long[][] directInput;

    PlanFacts(Plan plan, int rank) {
      direct = directOutput(plan, rank);
      directInput = directInput(plan, rank, direct);
      List<long[]> rest = new java.util.ArrayList<>();
      if (direct != null) {
        List<Step> steps = plan.steps(rank);
        for (int i = 0; i < steps.size(); i++) {
          if (!direct[i] && writesOutput(steps.get(i)) && steps.get(i).count() > 0) {
            rest.add(new long[] {steps.get(i).offset(), steps.get(i).count()});
          }
        }
      }
      restOffset = rest.stream().mapToLong(r -> r[0]).toArray();
      restCount = rest.stream().mapToLong(r -> r[1]).toArray();
      phases = new String[] {plan.algorithm() + "/intra-node", plan.algorithm() + "/network"};
      releasePhase = plan.releasePhase(rank);
      io.treeline.plan.Topology t = plan.topology();
      int node = t.node(rank);
      int[] peers = new int[t.localSize(node) - 1];
      for (int l = 0, k = 0; l < t.localSize(node); l++) {
        if (t.rank(node, l) != rank) {
          peers[k++] = t.rank(node, l);
        }
      }
      localPeers = peers;
    }
  }

  private static boolean writesOutput(Step s) {
    return s instanceof Step.ReduceFrom || s instanceof Step.CopyFrom || s instanceof Step.Copy;
  }

  /** An allreduce plan of peer-memory steps alone (no message step, no staged step). */
  private static boolean peerMemoryAllReduce(Plan plan) {
    if (plan.collective() != io.treeline.plan.Collective.ALL_REDUCE) {
      return false;
    }
    for (int r = 0; r < plan.size(); r++) {
      for (Step s : plan.steps(r)) {
        if (MessageSteps.isMessage(s) || !(s instanceof Step.ReduceFrom
            || s instanceof Step.CopyFrom || s instanceof Step.Copy
            || s instanceof Step.Signal || s instanceof Step.Wait)) {
          return false;
        }
      }
    }
    return true;
  }

  /** Whether step {@code s} reads buffer {@code buf} of {@code rank}. */
  private static boolean readsFrom(Step s, Buf buf, int rank) {
    return s instanceof Step.ReduceFrom x && x.buf() == buf
        && java.util.Arrays.stream(x.peers()).anyMatch(p -> p == rank)
        || s instanceof Step.CopyFrom y && y.buf() == buf && y.peer() == rank;
  }

  /**
   * Which of {@code rank}'s CopyFrom steps may write the caller's buffer instead of the
   * registered OUTPUT, or null for none. Only for allreduce plans of peer-memory steps alone
   * (message steps read and write OUTPUT in ways this does not follow), where this rank's
   * OUTPUT writes are disjoint and cover the message, and only a CopyFrom whose region no step
   * of any rank reads from this rank's OUTPUT (two-shot: the gathered slices; the slice this
   * rank reduced is read by every peer, so it stays and is copied out after).
   */
  static boolean[] directOutput(Plan plan, int rank) {
    if (!peerMemoryAllReduce(plan)) {
      return null;
    }
    List<long[]> readFromMe = new java.util.ArrayList<>();
    for (int r = 0; r < plan.size(); r++) {
      for (Step s : plan.steps(r)) {
        boolean reads = readsFrom(s, Buf.OUTPUT, rank);
        if (reads) {
          readFromMe.add(new long[] {s.offset(), s.offset() + s.count()});
        }
      }
    }
    List<Step> mine = plan.steps(rank);
    boolean[] direct = new boolean[mine.size()];
    long covered = 0;
    boolean any = false;
    List<long[]> written = new java.util.ArrayList<>();
    for (int i = 0; i < mine.size(); i++) {
      Step s = mine.get(i);
      if (!writesOutput(s) || s.count() == 0) {
        continue;
      }
      long lo = s.offset();
      long hi = lo + s.count();
      for (long[] w : written) {
        if (lo < w[1] && w[0] < hi) {
          return null; // a region written twice: the last writer would have to be followed
        }
      }
      written.add(new long[] {lo, hi});
      covered += s.count();
      if (s instanceof Step.CopyFrom) {
        boolean read = false;
        for (long[] r : readFromMe) {
          read |= lo < r[1] && r[0] < hi;
        }
        direct[i] = !read;
        any |= !read;
      }
    }
    return any && covered == plan.count() ? direct : null;
  }

  /**
   * Where the caller's input buffer may stand in for this rank's registered INPUT in {@code
   * plan}: the regions of INPUT the other ranks read, which the caller must copy in first, as
   * {offsets, counts} in elements (ascending, disjoint); null where it may not, and then the
   * whole input is copied in as before. Made once per plan; the call allocates nothing.
   */
  public long[][] directInput(Plan plan) {
    return facts(plan).directInput;
  }

  /**
   * The rule of {@link #directInput}: allreduce plans of peer-memory steps alone (a message step
   * sends from INPUT), where the peers do not read all of this rank's INPUT (else nothing is
   * saved: one-shot), no step of this rank copies from its own INPUT, and no own read of INPUT
   * comes after a step that writes the caller's output directly over the same region (the
   * caller may pass one buffer as input and output).
   */
  static long[][] directInput(Plan plan, int rank, boolean[] directOut) {
    if (!peerMemoryAllReduce(plan)) {
      return null;
    }
    List<long[]> read = new java.util.ArrayList<>();
    for (int r = 0; r < plan.size(); r++) {
      for (Step s : plan.steps(r)) {
        if (s.count() == 0) {
          continue;
        }
        if (r == rank && s instanceof Step.CopyFrom y && y.buf() == Buf.INPUT
            && y.peer() == rank) {
          return null;
        }
        boolean peerReads = r != rank && readsFrom(s, Buf.INPUT, rank);
        if (peerReads) {
          read.add(new long[] {s.offset(), s.offset() + s.count()});
        }
      }
    }
    List<Step> mine = plan.steps(rank);
    for (int i = 0; directOut != null && i < mine.size(); i++) {
      if (!directOut[i]) {
        continue;
      }
      long lo = mine.get(i).offset();
      long hi = lo + mine.get(i).count();
      for (int j = i + 1; j < mine.size(); j++) {
        Step s = mine.get(j);
        boolean readsOwn = s instanceof Step.Copy
            || s instanceof Step.ReduceFrom x && x.buf() == Buf.INPUT
            && java.util.Arrays.stream(x.peers()).anyMatch(p -> p == rank);
        if (readsOwn && s.offset() < hi && lo < s.offset() + s.count()) {
          return null;
        }
      }
    }
    read.sort(java.util.Comparator.comparingLong(a -> a[0]));
    List<long[]> merged = new java.util.ArrayList<>();
    long total = 0;
    for (long[] r : read) {
      long[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
      if (last != null && r[0] <= last[1]) {
        last[1] = Math.max(last[1], r[1]);
      } else {
        merged.add(new long[] {r[0], r[1]});
      }
    }
    for (long[] m : merged) {
      total += m[1] - m[0];
    }
    if (total >= plan.count()) {
      return null;
    }
    return new long[][] {merged.stream().mapToLong(m -> m[0]).toArray(),
        merged.stream().mapToLong(m -> m[1] - m[0]).toArray()};
  }

  private PlanFacts facts(Plan plan) {
    if (plan == lastPlan) {
      return lastFacts;
    }
    PlanFacts p = facts.get(plan);
    if (p == null) {
      if (facts.size() > 512) {
        facts.clear(); // the communicator's plan cache is bounded too
      }
      p = new PlanFacts(plan, rank);
      facts.put(plan, p);
    }
    lastPlan = plan;
    lastFacts = p;
    return p;
  }
}

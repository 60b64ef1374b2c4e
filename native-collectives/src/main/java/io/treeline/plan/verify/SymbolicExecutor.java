package io.treeline.plan.verify;

import io.treeline.plan.Buf;
import io.treeline.plan.Collective;
import io.treeline.plan.Plan;
import io.treeline.plan.Slices;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import io.treeline.plan.verify.Segments.Run;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a plan on symbols instead of numbers and proves it correct, or throws a
 * {@link PlanVerificationException} that names the rank, the step and what went wrong.
 *
 * <p>Every element of rank r's INPUT holds the symbol {r}; a reduce joins two symbols and fails
 * if they share a rank (a contribution counted twice) or if either is already final; a finish
 * marks a symbol final and fails if it already is. At the end every element of every OUTPUT
 * must hold exactly the collective's expected set (all ranks, final, for an allreduce).
 *
 * <p>Ranks run concurrently as far as their steps allow: a send blocks while its channel
 * (sender, receiver, lane) holds {@code capacity} undelivered messages, a receive blocks until a
 * message is there and must name the region the sender sent, a wait blocks until the peer has
 * signalled. A state where no rank can move and some have not finished is a deadlock.
 *
 * <p>Peer-memory reads are checked with vector clocks over the ranks of a node, advanced by
 * signals and by messages inside the node: a peer may read a region only after the owner's
 * last write to it happened before (through a signal it waited for), the owner may overwrite a
 * region only after every peer's read of it happened before, and a rank may finish only after
 * every peer finished reading its buffers. Happens-before through other nodes is ignored,
 * which can only make the check stricter. A plan with a deferred release
 * ({@link Plan#releasePhase}) may finish before its peers' reads: every peer reads before its
 * own release signal (its last step), and whoever runs the plan waits for those signals before
 * the rank writes its buffers again; that wait spans two calls, which this executor does not
 * model (the host runner's: {@code PlanRunner.awaitRelease}).
 */
public final class SymbolicExecutor {
  private static final int SAMPLE = 5;

  /** An element's contributions, and whether its value is final. Immutable. */
  private record Sym(BitSet ranks, boolean finished) {
    static Sym of(int rank) {
      BitSet b = new BitSet();
      b.set(rank);
      return new Sym(b, false);
    }

    Sym finish() {
      return new Sym(ranks, true);
    }
  }

  /** Who touched a region of a rank's buffer, in vector-clock time. Immutable. */
  private record Access(int writeClock, int[] readClock) {
  }

  private record Message(long offset, long count, List<Run<Sym>> values, int[] clock) {
  }

  private static final class Channel {
    final ArrayDeque<Message> queue = new ArrayDeque<>();
    boolean senderBlocked;
    boolean receiverBlocked;
  }

  private final Plan plan;
  private final Topology topo;
  private final int n;
  private final int capacity;
  private final Segments<Sym>[][] values;
  private final Segments<Access>[][] access;
  private final int[][] clock;
  private final int[] pc;
  private final int[] signalled;
  private final Map<Long, int[]> signalClock = new HashMap<>();
  private final List<List<Integer>> flagWaiters = new ArrayList<>();
  private final Map<Long, Channel> channels = new HashMap<>();
  private final ArrayDeque<Integer> runnable = new ArrayDeque<>();
  private final boolean[] queued;
  private final long[] rankInterSent;
  private final long[] rankInterRecv;
  private final long[] rankIntra;
  private final Map<Long, Long> linkBytes = new HashMap<>();
  private long steps;
  private long messages;

  private SymbolicExecutor(Plan plan, int capacity) {
    this.plan = plan;
    this.topo = plan.topology();
    this.n = topo.size();
    this.capacity = capacity;
    @SuppressWarnings("unchecked")
    Segments<Sym>[][] v = new Segments[n][Buf.values().length];
    @SuppressWarnings("unchecked")
    Segments<Access>[][] a = new Segments[n][Buf.values().length];
    this.values = v;
    this.access = a;
    this.clock = new int[n][];
    this.pc = new int[n];
    this.signalled = new int[n];
    this.queued = new boolean[n];
    this.rankInterSent = new long[n];
    this.rankInterRecv = new long[n];
    this.rankIntra = new long[n];
    for (int r = 0; r < n; r++) {
      int local = topo.localSize(topo.node(r));
      values[r][Buf.INPUT.ordinal()] = new Segments<>(plan.count(), Sym.of(r));
      values[r][Buf.OUTPUT.ordinal()] = new Segments<>(plan.count(), null);
      // Clocks start at 1: INPUT was written "at entry", before any peer may have seen it.
      clock[r] = new int[local];
      clock[r][topo.localRank(r)] = 1;
      access[r][Buf.INPUT.ordinal()] = new Segments<>(plan.count(), new Access(1, new int[local]));
      access[r][Buf.OUTPUT.ordinal()] = new Segments<>(plan.count(), new Access(0, new int[local]));
      values[r][Buf.STAGE.ordinal()] = new Segments<>(plan.count(), null);
      access[r][Buf.STAGE.ordinal()] = new Segments<>(plan.count(), new Access(0, new int[local]));
      flagWaiters.add(new ArrayList<>());
    }
  }

  /** Verify with one-message channels, the strictest buffering a real transport offers. */
  public static Verification verify(Plan plan) {
    return verify(plan, 1);
  }

  public static Verification verify(Plan plan, int channelCapacity) {
    if (channelCapacity < 1) {
      throw new IllegalArgumentException("channel capacity must be at least 1");
    }
    return new SymbolicExecutor(plan, channelCapacity).run();
  }

  private Verification run() {
    for (int r = 0; r < n; r++) {
      wake(r);
    }
    while (!runnable.isEmpty()) {
      int r = runnable.poll();
      queued[r] = false;
      advance(r);
    }
    List<String> stuck = new ArrayList<>();
    int stuckCount = 0;
    for (int r = 0; r < n; r++) {
      if (pc[r] < plan.steps(r).size()) {
        if (stuckCount++ < SAMPLE) {
          stuck.add("rank " + r + " at step " + pc[r] + " " + plan.steps(r).get(pc[r]));
        }
      }
    }
    if (stuckCount > 0) {
      throw fail("deadlock: " + stuckCount + " of " + n + " ranks cannot move: "
          + String.join("; ", stuck));
    }
    for (Map.Entry<Long, Channel> e : channels.entrySet()) {
      if (!e.getValue().queue.isEmpty()) {
        long k = e.getKey();
        int lanes = Math.max(1, plan.lanes());
        long pair = k / lanes;
        throw fail("rank " + (pair / n) + " sent " + e.getValue().queue.size()
            + " message(s) to rank " + (pair % n) + " on lane " + (k % lanes)
            + " that were never received");
      }
    }
    checkResult();
    return report();
  }

  private void wake(int r) {
    if (!queued[r]) {
      queued[r] = true;
      runnable.add(r);
    }
  }

  private void advance(int r) {
    List<Step> rs = plan.steps(r);
    while (pc[r] < rs.size()) {
      Step s = rs.get(pc[r]);
      if (!execute(r, s)) {
        return;
      }
      pc[r]++;
      steps++;
    }
    finishRank(r);
  }

  private boolean execute(int r, Step step) {
    if (step instanceof Step.Copy c) {
      List<Run<Sym>> in = read(r, r, Buf.INPUT, c.offset(), c.count(), step);
      write(r, Buf.OUTPUT, c.offset(), c.count(), finishAll(r, step, in, c.finish()), step);
    } else if (step instanceof Step.Send s) {
      checkPeer(r, s.peer(), step);
      Channel ch = channel(r, s.peer(), s.lane(), step);
      if (ch.queue.size() >= capacity) {
        ch.senderBlocked = true;
        return false;
      }
      List<Run<Sym>> v = read(r, r, s.src(), s.offset(), s.count(), step);
      int[] vc = null;
      if (topo.sameNode(r, s.peer())) {
        vc = release(r);
      }
      ch.queue.add(new Message(s.offset(), s.count(), v, vc));
      messages++;
      count(r, s.peer(), s.count());
      if (ch.receiverBlocked) {
        ch.receiverBlocked = false;
        wake(s.peer());
      }
    } else if (step instanceof Step.RecvReduce rr) {
      Message m = receive(r, rr.peer(), rr.lane(), rr.offset(), rr.count(), step);
      if (m == null) {
        return false;
      }
      List<Run<Sym>> acc = read(r, r, rr.acc(), rr.offset(), rr.count(), step);
      write(r, rr.acc() == Buf.STAGE ? Buf.STAGE : Buf.OUTPUT, rr.offset(), rr.count(),
          reduce(r, step, acc, m.values, rr.finish()), step);
    } else if (step instanceof Step.RecvCopy rc) {
      Message m = receive(r, rc.peer(), rc.lane(), rc.offset(), rc.count(), step);
      if (m == null) {
        return false;
      }
      write(r, rc.dst(), rc.offset(), rc.count(), m.values, step);
    } else if (step instanceof Step.StageOut so) {
      write(r, Buf.STAGE, so.offset(), so.count(), read(r, r, Buf.OUTPUT, so.offset(),
          so.count(), step), step);
    } else if (step instanceof Step.StageIn si) {
      List<Run<Sym>> staged = read(r, r, Buf.STAGE, si.offset(), si.count(), step);
      write(r, Buf.OUTPUT, si.offset(), si.count(), finishAll(r, step, staged, si.finish()),
          step);
    } else if (step instanceof Step.Signal sg) {
      if (sg.phase() < 1 || sg.phase() > Step.MAX_PHASE) {
        throw fail(r, step, "signals phase " + sg.phase() + ", outside 1.." + Step.MAX_PHASE
            + " (a call's flags hold " + Step.MAX_PHASE + " phases)");
      }
      if (sg.phase() <= signalled[r]) {
        throw fail(r, step, "signals phase " + sg.phase() + " after phase " + signalled[r]
            + "; phases must increase");
      }
      signalClock.put(((long) r << 32) | sg.phase(), release(r));
      signalled[r] = sg.phase();
      for (int w : flagWaiters.get(r)) {
        wake(w);
      }
      flagWaiters.get(r).clear();
    } else if (step instanceof Step.Wait w) {
      checkLocalPeer(r, w.peer(), step);
      if (signalled[w.peer()] < w.phase()) {
        flagWaiters.get(w.peer()).add(r);
        return false;
      }
      int[] snap = signalClock.get(((long) w.peer() << 32) | w.phase());
      if (snap == null) {
        throw fail(r, step, "waits for phase " + w.phase() + " of rank " + w.peer()
            + ", which rank " + w.peer() + " never signals (it skipped from a lower phase)");
      }
      acquire(r, snap);
    } else if (step instanceof Step.ReduceFrom rf) {
      List<Run<Sym>> acc = null;
      checkPeerMemory(r, rf.buf(), step);
      for (int p : rf.peers()) {
        checkLocalPeer(r, p, step);
        List<Run<Sym>> v = read(r, p, rf.buf(), rf.offset(), rf.count(), step);
        acc = acc == null ? v : reduce(r, step, acc, v, false);
      }
      if (acc == null) {
        throw fail(r, step, "reduces from no peers");
      }
      write(r, Buf.OUTPUT, rf.offset(), rf.count(), finishAll(r, step, acc, rf.finish()), step);
    } else if (step instanceof Step.CopyFrom cf) {
      checkLocalPeer(r, cf.peer(), step);
      checkPeerMemory(r, cf.buf(), step);
      write(r, Buf.OUTPUT, cf.offset(), cf.count(), read(r, cf.peer(), cf.buf(), cf.offset(),
          cf.count(), step), step);
    } else {
      throw new AssertionError(step);
    }
    return true;
  }

  private Message receive(int r, int peer, int lane, long offset, long count, Step step) {
    checkPeer(r, peer, step);
    Channel ch = channel(peer, r, lane, step);
    Message m = ch.queue.poll();
    if (m == null) {
      ch.receiverBlocked = true;
      return null;
    }
    if (m.offset != offset || m.count != count) {
      throw fail(r, step, "expects elements [" + offset + ", " + (offset + count) + ") but rank "
          + peer + " sent [" + m.offset + ", " + (m.offset + m.count) + ") on lane " + lane);
    }
    if (m.clock != null) {
      acquire(r, m.clock);
    }
    if (ch.senderBlocked) {
      ch.senderBlocked = false;
      wake(peer);
    }
    return m;
  }

  private Channel channel(int from, int to, int lane, Step step) {
    int lanes = Math.max(1, plan.lanes());
    if (lane < 0 || lane >= lanes) {
      throw fail(from, step, "uses lane " + lane + " but the plan declares " + plan.lanes());
    }
    return channels.computeIfAbsent(((long) from * n + to) * lanes + lane, k -> new Channel());
  }

  // ---- values ------------------------------------------------------------------------------

  private List<Run<Sym>> read(int reader, int owner, Buf buf, long offset, long count,
      Step step) {
    List<Run<Sym>> v = values[owner][buf.ordinal()].get(offset, offset + count);
    for (Run<Sym> run : v) {
      if (run.value() == null) {
        throw fail(reader, step, "reads elements [" + run.lo() + ", " + run.hi() + ") of rank "
            + owner + "'s " + buf + " before anything was written there");
      }
    }
    if (owner != reader) {
      checkPeerRead(reader, owner, buf, offset, count, step);
      rankIntra[owner] += count * plan.type().size();
      link(owner, reader, count);
    }
    return v;
  }

  private void write(int r, Buf dst, long offset, long count, List<Run<Sym>> v, Step step) {
    if (dst == Buf.OUTPUT) {
      checkOwnWrite(r, offset, count, step);
    }
    Segments<Sym> out = values[r][dst.ordinal()];
    for (Run<Sym> run : v) {
      out.put(run.lo(), run.hi(), run.value());
    }
  }

  private List<Run<Sym>> reduce(int r, Step step, List<Run<Sym>> a, List<Run<Sym>> b,
      boolean finish) {
    List<Run<Sym>> out = new ArrayList<>();
    int i = 0;
    int j = 0;
    while (i < a.size() && j < b.size()) {
      Run<Sym> x = a.get(i);
      Run<Sym> y = b.get(j);
      long lo = Math.max(x.lo(), y.lo());
      long hi = Math.min(x.hi(), y.hi());
      if (x.value().finished() || y.value().finished()) {
        throw fail(r, step, "reduces into elements [" + lo + ", " + hi
            + ") whose value is already final");
      }
      if (x.value().ranks().intersects(y.value().ranks())) {
        BitSet both = (BitSet) x.value().ranks().clone();
        both.and(y.value().ranks());
        throw fail(r, step, "counts the contribution of rank(s) " + sample(both)
            + " twice in elements [" + lo + ", " + hi + ")");
      }
      BitSet u = (BitSet) x.value().ranks().clone();
      u.or(y.value().ranks());
      out.add(new Run<>(lo, hi, new Sym(u, finish)));
      if (x.hi() == hi) {
        i++;
      }
      if (y.hi() == hi) {
        j++;
      }
    }
    return out;
  }

  private List<Run<Sym>> finishAll(int r, Step step, List<Run<Sym>> v, boolean finish) {
    if (!finish) {
      return v;
    }
    List<Run<Sym>> out = new ArrayList<>(v.size());
    for (Run<Sym> run : v) {
      if (run.value().finished()) {
        throw fail(r, step, "finishes elements [" + run.lo() + ", " + run.hi()
            + ") a second time (an AVG would divide twice)");
      }
      out.add(new Run<>(run.lo(), run.hi(), run.value().finish()));
    }
    return out;
  }

  // ---- happens-before for peer memory -------------------------------------------------------

  private int[] release(int r) {
    int[] snap = clock[r].clone();
    clock[r][topo.localRank(r)]++;
    return snap;
  }

  private void acquire(int r, int[] snap) {
    int[] c = clock[r];
    for (int i = 0; i < c.length; i++) {
      c[i] = Math.max(c[i], snap[i]);
    }
  }

  private void checkPeerRead(int reader, int owner, Buf buf, long offset, long count,
      Step step) {
    int o = topo.localRank(owner);
    int me = topo.localRank(reader);
    int now = clock[reader][me];
    int seen = clock[reader][o];
    access[owner][buf.ordinal()].update(offset, offset + count, a -> {
      if (a.writeClock > seen) {
        throw fail(reader, step, "reads rank " + owner + "'s " + buf + " [" + offset + ", "
            + (offset + count) + ") before rank " + owner + " signalled that it is complete");
      }
      int[] reads = a.readClock.clone();
      reads[me] = Math.max(reads[me], now);
      return new Access(a.writeClock, reads);
    });
  }

  private void checkOwnWrite(int r, long offset, long count, Step step) {
    int me = topo.localRank(r);
    int[] c = clock[r];
    access[r][Buf.OUTPUT.ordinal()].update(offset, offset + count, a -> {
      for (int p = 0; p < a.readClock.length; p++) {
        if (p != me && a.readClock[p] > c[p]) {
          throw fail(r, step, "overwrites OUTPUT [" + offset + ", " + (offset + count)
              + ") while local rank " + p + " may still be reading it");
        }
      }
      return new Access(c[me], a.readClock);
    });
  }

  private void finishRank(int r) {
    if (plan.releasePhase(r) > 0) {
      return; // its peers' reads precede their own release signals, which runs wait for
    }
    int me = topo.localRank(r);
    for (Buf b : Buf.values()) {
      for (Run<Access> run : access[r][b.ordinal()].all()) {
        int[] reads = run.value().readClock;
        for (int p = 0; p < reads.length; p++) {
          if (p != me && reads[p] > clock[r][p]) {
            throw fail("rank " + r + " finishes while local rank " + p + " (rank "
                + topo.rank(topo.node(r), p) + ") may still be reading its " + b + " ["
                + run.lo() + ", " + run.hi() + "): the plan needs a barrier at the end");
          }
        }
      }
    }
  }

  // ---- result ------------------------------------------------------------------------------

  private void checkResult() {
    Collective what = plan.collective();
    long count = plan.count();
    int align = plan.config().alignElements(plan.type().size());
    for (int r = 0; r < n; r++) {
      long lo = 0;
      long hi = count;
      if (what == Collective.REDUCE_SCATTER) {
        lo = Slices.lo(count, n, r, align);
        hi = Slices.hi(count, n, r, align);
      }
      for (Run<Sym> run : values[r][Buf.OUTPUT.ordinal()].get(lo, hi)) {
        if (run.value() == null) {
          throw fail("rank " + r + " ends without a result in elements [" + run.lo() + ", "
              + run.hi() + ")");
        }
        BitSet got = run.value().ranks();
        switch (what) {
          case ALL_REDUCE, REDUCE_SCATTER -> {
            if (got.cardinality() != n) {
              BitSet missing = new BitSet();
              missing.set(0, n);
              missing.andNot(got);
              throw fail("rank " + r + " ends with elements [" + run.lo() + ", " + run.hi()
                  + ") missing the contribution of rank(s) " + sample(missing));
            }
            if (!run.value().finished()) {
              throw fail("rank " + r + " ends with elements [" + run.lo() + ", " + run.hi()
                  + ") complete but never finished (an AVG would not be divided)");
            }
          }
          case ALL_GATHER -> {
            for (long e = run.lo(); e < run.hi(); ) {
              int owner = ownerOf(e, count, align);
              long ownerHi = Math.min(run.hi(), Slices.hi(count, n, owner, align));
              if (got.cardinality() != 1 || !got.get(owner)) {
                throw fail("rank " + r + " ends with elements [" + e + ", " + ownerHi
                    + ") holding rank(s) " + sample(got) + " instead of rank " + owner);
              }
              e = ownerHi;
            }
          }
          case BROADCAST -> {
            if (got.cardinality() != 1 || !got.get(plan.root())) {
              throw fail("rank " + r + " ends with elements [" + run.lo() + ", " + run.hi()
                  + ") holding rank(s) " + sample(got) + " instead of root " + plan.root());
            }
          }
          default -> throw new AssertionError(what);
        }
      }
    }
  }

  private int ownerOf(long e, long count, int align) {
    int lo = 0;
    int hi = n - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (Slices.lo(count, n, mid, align) <= e) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  // ---- traffic -------------------------------------------------------------------------------

  private void count(int from, int to, long elems) {
    long bytes = elems * plan.type().size();
    if (topo.sameNode(from, to)) {
      rankIntra[from] += bytes;
    } else {
      rankInterSent[from] += bytes;
      rankInterRecv[to] += bytes;
    }
    link(from, to, elems);
  }

  private void link(int from, int to, long elems) {
    linkBytes.merge((long) from * n + to, elems * plan.type().size(), Long::sum);
  }

  private Verification report() {
    int nodes = topo.nodes();
    long[] nodeSent = new long[nodes];
    long[] nodeRecv = new long[nodes];
    for (int r = 0; r < n; r++) {
      nodeSent[topo.node(r)] += rankInterSent[r];
      nodeRecv[topo.node(r)] += rankInterRecv[r];
    }
    long maxLink = 0;
    long minLink = linkBytes.isEmpty() ? 0 : Long.MAX_VALUE;
    for (long b : linkBytes.values()) {
      maxLink = Math.max(maxLink, b);
      minLink = Math.min(minLink, b);
    }
    return new Verification(n, nodes, steps, messages, linkBytes.size(), maxLink, minLink,
        max(rankInterSent), max(rankInterRecv), max(nodeSent), min(nodeSent), max(nodeRecv),
        min(nodeRecv), max(rankIntra), rankInterSent.clone(), rankInterRecv.clone());
  }

  private static long max(long[] xs) {
    return Arrays.stream(xs).max().orElse(0);
  }

  private static long min(long[] xs) {
    return Arrays.stream(xs).min().orElse(0);
  }

  // ---- errors --------------------------------------------------------------------------------

  private void checkPeer(int r, int peer, Step step) {
    if (peer < 0 || peer >= n || peer == r) {
      throw fail(r, step, "names peer " + peer + ", which is not another rank of " + n);
    }
  }

  private void checkPeerMemory(int r, Buf buf, Step step) {
    if (buf == Buf.STAGE) {
      throw fail(r, step, "reads a peer's STAGE, a rank's private host copy, not peer memory");
    }
  }

  private void checkLocalPeer(int r, int peer, Step step) {
    if (peer < 0 || peer >= n || !topo.sameNode(r, peer)) {
      throw fail(r, step, "reads peer memory of rank " + peer
          + ", which is not on its node (node " + topo.node(r) + ")");
    }
  }

  private PlanVerificationException fail(int r, Step step, String what) {
    return fail("rank " + r + " step " + pc[r] + " (" + step + ") " + what);
  }

  private PlanVerificationException fail(String what) {
    return new PlanVerificationException(plan.algorithm() + " " + plan.collective() + " on "
        + topo + ", " + plan.count() + " elements: " + what);
  }

  private static String sample(BitSet b) {
    StringBuilder s = new StringBuilder();
    int shown = 0;
    for (int i = b.nextSetBit(0); i >= 0 && shown < SAMPLE; i = b.nextSetBit(i + 1), shown++) {
      s.append(shown == 0 ? "" : ", ").append(i);
    }
    if (b.cardinality() > SAMPLE) {
      s.append(", ... (").append(b.cardinality()).append(" in all)");
    }
    return s.toString();
  }
}

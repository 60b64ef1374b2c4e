package io.treeline.transport.inprocess;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CollectiveException;
import io.treeline.exec.PlanRunner;
import io.treeline.exec.CallDescriptor;
import io.treeline.exec.HostPeerMemory;
import io.treeline.exec.NetworkLink;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Ring;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ranks as threads of one JVM: the transport the plans are first run on with real numbers, and
 * the reference the multi-process transports are tested against. Each rank's thread calls the
 * collectives of its {@link Rank} in the same order, as separate processes would.
 *
 * <p>Messages go through bounded channels of {@code slots} direct buffers of
 * {@code config.chunkBytes()} each, one channel per (sender, receiver, lane), with head and
 * tail counters published with release and read with acquire. Peer memory is the peers'
 * own buffers, shared directly; flags are padded longs. Every wait backs off (spin, yield,
 * park) and ends at the collective's deadline, or as soon as another rank of the group fails.
 */
public final class InProcessGroup implements AutoCloseable {
  /** Longs between two ranks' flags: 128 bytes, so that no two flags share a cache line. */
  private static final int PAD = 16;

  private final Topology topology;
  private final PlanConfig config;
  private final Duration timeout;
  private final int slots;
  private final AtomicLongArray flags;
  private final ByteBuffer[][] registered;
  private final ConcurrentHashMap<Long, Channel> channels = new ConcurrentHashMap<>();
  private final AtomicReference<CollectiveException> failure = new AtomicReference<>();
  private final Rank[] ranks;
  private volatile boolean closed;

  public InProcessGroup(Topology topology, PlanConfig config, Duration timeout) {
    this(topology, config, timeout, 2);
  }

  public InProcessGroup(Topology topology, PlanConfig config, Duration timeout, int slots) {
    this.topology = topology;
    this.config = config;
    this.timeout = timeout;
    this.slots = slots;
    this.flags = new AtomicLongArray(topology.size() * PAD);
    this.registered = new ByteBuffer[topology.size()][2];
    this.ranks = new Rank[topology.size()];
    for (int r = 0; r < ranks.length; r++) {
      ranks[r] = new Rank(r);
    }
  }

  public Topology topology() {
    return topology;
  }

  /** The handle rank {@code r}'s thread uses; one thread per rank. */
  public Rank rank(int r) {
    return ranks[r];
  }

  /** Channels are created on first use and kept; their slots are the only buffers allocated. */
  private Channel channel(int from, int to, int lane) {
    long key = ((long) from * topology.size() + to) * 64 + lane;
    return channels.computeIfAbsent(key, k -> new Channel(slots, config.chunkBytes()));
  }

  private void fail(CollectiveException e) {
    failure.compareAndSet(null, e);
  }

  private void checkFailure(int rank, String phase) {
    CollectiveException f = failure.get();
    if (f != null) {
      throw new CollectiveException(rank, f.rank(), phase, "aborted because rank " + f.rank()
          + " failed: " + f.getMessage(), f);
    }
    if (closed) {
      throw new CollectiveException(rank, -1, phase, "the group was closed", null);
    }
  }

  @Override
  public void close() {
    closed = true;
    channels.clear();
  }

  /** One sender, one receiver: a ring of slots with a release/acquire head and tail. */
  private static final class Channel {
    final ByteBuffer[] slot;
    final long[] length;
    final AtomicLongArray counters = new AtomicLongArray(2 * PAD); // [0]: tail, [PAD]: head

    Channel(int slots, long slotBytes) {
      slot = new ByteBuffer[slots];
      length = new long[slots];
      for (int i = 0; i < slots; i++) {
        slot[i] = ByteBuffer.allocateDirect(Math.toIntExact(slotBytes))
            .order(ByteOrder.nativeOrder());
      }
    }
  }

  /** One rank: its collectives, its transport and its runner. Used by one thread only. */
  public final class Rank implements HostPeerMemory, NetworkLink {
    private final int rank;
    private final PlanRunner runner;
    private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
    private long sequence;
    private Plan lastPlan;

    private Rank(int rank) {
      this.rank = rank;
      this.runner = new PlanRunner(this, this, rank, topology.maxLocalSize(),
          new io.treeline.reduce.HostReducer());
    }

    public int rank() {
      return rank;
    }

    public void allReduce(Algorithm algo, ByteBuffer in, ByteBuffer out, long count,
        DataType type, ReduceOp op) {
      Plan p = lastPlan;
      if (p == null || !p.algorithm().equals(algo.id()) || p.count() != count
          || p.type() != type || p.collective() != io.treeline.plan.Collective.ALL_REDUCE) {
        p = algo.allReduce(topology, type, count, config);
      }
      execute(p, in, out, op);
    }

    public void reduceScatter(ByteBuffer in, ByteBuffer out, long count, DataType type,
        ReduceOp op) {
      execute(topology.nodes() == 1 ? TwoShot.reduceScatter(topology, type, count, config)
          : Ring.reduceScatter(topology, type, count, config), in, out, op);
    }

    public void allGather(ByteBuffer in, ByteBuffer out, long count, DataType type) {
      execute(Ring.allGather(topology, type, count, config), in, out, ReduceOp.SUM);
    }

    public void broadcast(ByteBuffer in, ByteBuffer out, long count, DataType type, int root) {
      execute(TreeBroadcast.broadcast(topology, type, count, root, config), in, out,
          ReduceOp.SUM);
    }

    /** Run any plan for this rank. */
    public void execute(Plan plan, ByteBuffer in, ByteBuffer out, ReduceOp op) {
      if (!plan.topology().equals(topology)) {
        throw new IllegalArgumentException("plan for " + plan.topology() + " on a group of "
            + topology);
      }
      checkFailure(rank, plan.algorithm());
      long need = plan.bytes();
      if (in.capacity() < need || out.capacity() < need) {
        throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm() + " of "
            + plan.count() + " x " + plan.type() + " needs " + need + "-byte buffers, got "
            + in.capacity() + " and " + out.capacity());
      }
      lastPlan = plan;
      registered[rank][Buf.INPUT.ordinal()] = in;
      registered[rank][Buf.OUTPUT.ordinal()] = out;
      try {
        runner.run(plan, ++sequence, 0, op, timeout);
      } catch (CollectiveException e) {
        fail(e);
        throw e;
      } catch (RuntimeException e) {
        CollectiveException c = new CollectiveException(rank, -1, plan.algorithm(),
            e.toString(), e);
        fail(c);
        throw c;
      }
    }

    @Override
    public void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
        String phase) {
      Channel ch = channel(rank, peer, lane);
      long tail = ch.counters.getPlain(0);
      while (tail - ch.counters.getAcquire(PAD) >= ch.slot.length) {
        waitOrFail(peer, deadline, phase, "a free slot to send on lane " + lane);
      }
      idle.reset();
      int i = (int) (tail % ch.slot.length);
      ByteBuffer slot = ch.slot[i];
      if (bytes > slot.capacity()) {
        throw new IllegalArgumentException("message of " + bytes + " bytes exceeds the "
            + slot.capacity() + "-byte channel slot (chunkBytes)");
      }
      slot.put(0, src, (int) offset, (int) bytes);
      ch.length[i] = bytes;
      ch.counters.setRelease(0, tail + 1);
    }

    @Override
    public ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase) {
      Channel ch = channel(peer, rank, lane);
      long head = ch.counters.getPlain(PAD);
      while (ch.counters.getAcquire(0) <= head) {
        waitOrFail(peer, deadline, phase, "a message on lane " + lane);
      }
      idle.reset();
      int i = (int) (head % ch.slot.length);
      if (ch.length[i] != bytes) {
        throw new CollectiveException(rank, peer, phase, "expected a " + bytes
            + "-byte message on lane " + lane + " but got " + ch.length[i]
            + " bytes: the ranks are running different plans", null);
      }
      return ch.slot[i];
    }

    @Override
    public void release(int peer, int lane, long deadline, String phase) {
      Channel ch = channel(peer, rank, lane);
      ch.counters.setRelease(PAD, ch.counters.getPlain(PAD) + 1);
    }

    @Override
    public void signal(long value) {
      flags.setRelease(rank * PAD, value);
    }

    @Override
    public void await(int peer, long value, long deadline, String phase) {
      while (flags.getAcquire(peer * PAD) < value) {
        waitOrFail(peer, deadline, phase, "flag " + value + " (sequence "
            + value / PlanRunner.PHASES + ", phase " + value % PlanRunner.PHASES + ")");
      }
      idle.reset();
    }

    @Override
    public ByteBuffer buffer(int peer, Buf buf) {
      return registered[peer][buf.ordinal()];
    }

    @Override
    public long capacity() {
      ByteBuffer in = registered[rank][Buf.INPUT.ordinal()];
      return in == null ? 0 : in.capacity();
    }

    @Override
    public void beginCall(long sequence, CallDescriptor call) {
      // ranks of one group share the plan object they run; nothing to publish
    }

    @Override
    public void abort(String reason) {
      fail(new CollectiveException(rank, -1, "abort", reason, null));
    }

    @Override
    public void close() {
      // the group owns the channels and flags; InProcessGroup.close releases them
    }

    private void waitOrFail(int peer, long deadline, String phase, String what) {
      checkFailure(rank, phase);
      if (System.nanoTime() - deadline > 0) {
        throw CollectiveException.timeout(rank, peer, phase + " #" + sequence, what + " from rank "
            + peer, timeout);
      }
      idle.idle();
    }
  }
}

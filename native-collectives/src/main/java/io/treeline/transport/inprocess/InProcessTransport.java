package io.treeline.transport.inprocess;

import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import io.treeline.exec.HostPeerMemory;
import io.treeline.exec.NetworkLink;
import io.treeline.exec.PeerWatch;
import io.treeline.exec.PlanRunner;
import io.treeline.plan.Buf;
import io.treeline.transport.TransportProvider;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Transports for ranks that are threads of one JVM, with the same contracts as shared memory
 * and TCP: the {@link #memory()} provider gives every rank direct buffers its peers read in
 * place and a padded flag per rank (release/acquire through {@link AtomicLongArray}); the
 * {@link #network()} provider gives bounded channels of {@code slots} direct buffers per
 * (sender, receiver, lane), head and tail published with release and read with acquire. Every
 * wait backs off (spin, yield, park), ends at its deadline, and ends at once when the peer
 * aborted. Calls are checked like the multi-process transports check them: a flag or message
 * from a peer in the same call with a different descriptor fails with a
 * {@link CallMismatchException}.
 *
 * <p>Failures travel like they do between processes: every wait polls the rank's
 * {@link PeerWatch}, whose check (every {@link PeerWatch#CHECK_INTERVAL_NANOS} of waiting) scans
 * every rank's abort word and leave word, so a rank that aborted reaches every rank, whichever
 * rank each waits on, and a rank that closed its communicator after call k fails at once the
 * ranks in a later call (and disturbs no rank still finishing call k).
 *
 * <p>One instance serves one group of ranks: every rank's communicator opens the same
 * instance's providers.
 */
public final class InProcessTransport {
  /** Longs between two ranks' words: 128 bytes, so that no two share a cache line. */
  private static final int PAD = 16;

  private final int size;
  private final long capacity;
  private final int slotBytes;
  private final int slots;
  private final Duration timeout;
  private final ByteBuffer[][] registered;
  private final AtomicLongArray flags;
  /** Per rank {sequence, count, meta} at rank * PAD: a sequence lock (-1 while written). */
  private final AtomicLongArray calls;
  private final AtomicReferenceArray<String> aborted;
  /** Per rank: 0 while it is in the group, else 1 + the last call it completed before leaving. */
  private final AtomicLongArray leftAfter;
  /** Per rank: whether its watch has the scan of {@link #scan} (memory or link, once). */
  private final java.util.concurrent.atomic.AtomicIntegerArray scanned;
  private final ConcurrentHashMap<Long, Channel> channels = new ConcurrentHashMap<>();

  /**
   * @param size ranks in the group
   * @param capacity bytes of each rank's INPUT and OUTPUT buffer
   * @param slotBytes the largest message (a plan's chunk)
   * @param slots slots per channel
   * @param timeout the collective timeout, quoted in errors
   */
  public InProcessTransport(int size, long capacity, int slotBytes, int slots,
      Duration timeout) {
    this.size = size;
    this.capacity = capacity;
    this.slotBytes = slotBytes;
    this.slots = slots;
    this.timeout = timeout;
    this.registered = new ByteBuffer[size][2];
    this.flags = new AtomicLongArray(size * PAD);
    this.calls = new AtomicLongArray(size * PAD);
    this.aborted = new AtomicReferenceArray<>(size);
    this.leftAfter = new AtomicLongArray(size);
    this.scanned = new java.util.concurrent.atomic.AtomicIntegerArray(size);
  }

  /** A rank's watch check: what every other rank's abort and leave words say. */
  private void scan(int self, PeerWatch watch) {
    for (int p = 0; p < size; p++) {
      if (p == self) {
        continue;
      }
      String reason = aborted.get(p);
      if (reason != null) {
        watch.fail(p, "rank " + p + " aborted: " + reason);
        return;
      }
      long left = leftAfter.get(p);
      if (left != 0) {
        watch.left(p, left - 1);
      }
    }
  }

  private PeerWatch watch(TransportProvider.Peers peers) {
    PeerWatch w = peers.watch();
    int self = peers.planRank();
    if (scanned.compareAndSet(self, 0, 1)) {
      w.addCheck(x -> scan(self, x));
    }
    return w;
  }

  public TransportProvider<HostPeerMemory> memory() {
    return local -> {
      ByteBuffer in = direct(capacity);
      ByteBuffer out = direct(capacity);
      return new Pending<HostPeerMemory>() {
        @Override
        public HostPeerMemory connect(TransportProvider.Peers peers) {
          registered[peers.planRank()][Buf.INPUT.ordinal()] = in;
          registered[peers.planRank()][Buf.OUTPUT.ordinal()] = out;
          peers.barrier().run(); // every rank has registered its buffers
          return new Memory(peers.planRank(), watch(peers));
        }
      };
    };
  }

  public TransportProvider<NetworkLink> network() {
    return local -> new Pending<NetworkLink>() {
      @Override
      public NetworkLink connect(TransportProvider.Peers peers) {
        return new Link(peers.planRank(), watch(peers));
      }
    };
  }

  private abstract static class Pending<T> implements TransportProvider.Pending<T> {
    @Override
    public byte[] address() {
      return new byte[0]; // ranks find each other by plan rank inside the instance
    }

    @Override
    public void close() {
      // nothing outside the Java heap
    }
  }

  private static ByteBuffer direct(long bytes) {
    return ByteBuffer.allocateDirect(Math.toIntExact(Math.max(bytes, 1)))
        .order(ByteOrder.nativeOrder());
  }

  private Channel channel(int from, int to, int lane) {
    long key = ((long) from * size + to) * 64 + lane;
    return channels.computeIfAbsent(key, k -> new Channel(slots, slotBytes));
  }

  /** Shared by a rank's memory and link: who it is, which call it is in, and how it waits. */
  private abstract class Side {
    final int rank;
    final PeerWatch watch;
    final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
    long sequence;
    CallDescriptor call;
    volatile boolean left;

    Side(int rank, PeerWatch watch) {
      this.rank = rank;
      this.watch = watch;
    }

    /**
     * One turn of a wait for {@code peer}: fails if it aborted, if any rank did or left before
     * this call (the watch), if this rank is closing, or at the deadline. {@code what} and
     * {@code value} describe the wait only when it fails.
     */
    void waitOrFail(int peer, long deadline, String phase, String what, long value) {
      String reason = aborted.get(peer);
      if (reason != null) {
        throw CollectiveException.peerFailed(rank, peer, phase + " #" + sequence, "rank " + peer
            + " aborted: " + reason, timeout);
      }
      if (left) {
        throw new CollectiveException(rank, peer, phase, "this rank aborted or closed its "
            + "communicator", null);
      }
      long now = System.nanoTime();
      String why = watch.poll(now);
      if (why != null) {
        throw watch.failed(phase + " #" + sequence, why);
      }
      if (now - deadline > 0) {
        throw CollectiveException.timeout(rank, peer, phase + " #" + sequence, describe(what,
            value) + " from rank " + peer, timeout);
      }
      idle.idle();
    }

    void abortSide(String reason) {
      left = true;
      aborted.compareAndSet(rank, null, reason);
    }

    /** Leaving in order: the last call this rank completed, for the others to judge. */
    void leaveSide() {
      left = true;
      long done = watch.inCall() ? watch.sequence() - 1 : watch.sequence();
      leftAfter.compareAndSet(rank, 0, 1 + Math.max(done, 0));
    }
  }

  private static String describe(String what, long value) {
    return switch (what) {
      case FLAG -> "flag " + value + " (sequence " + value / PlanRunner.PHASES + ", phase "
          + value % PlanRunner.PHASES + ")";
      case SLOT -> "a free slot to send on lane " + value;
      default -> "a message on lane " + value;
    };
  }

  private static final String FLAG = "flag";
  private static final String SLOT = "slot";
  private static final String MESSAGE = "message";

  private final class Memory extends Side implements HostPeerMemory {
    Memory(int rank, PeerWatch watch) {
      super(rank, watch);
    }

    @Override
    public ByteBuffer buffer(int peer, Buf buf) {
      return registered[peer][buf.ordinal()];
    }

    @Override
    public long capacity() {
      return capacity;
    }

    @Override
    public void beginCall(long sequence, CallDescriptor call) {
      this.sequence = sequence;
      this.call = call;
      int at = rank * PAD;
      calls.set(at, -1);
      calls.set(at + 1, call.count());
      calls.set(at + 2, call.meta());
      calls.set(at, sequence);
    }

    @Override
    public void signal(long value) {
      flags.setRelease(rank * PAD, value);
    }

    @Override
    public void await(int peer, long value, long deadline, String phase) {
      while (flags.getAcquire(peer * PAD) < value) {
        waitOrFail(peer, deadline, phase, FLAG, value);
      }
      idle.reset();
      // The peer published its call before the signal we acquired; if it is still in our call
      // (same sequence before and after reading), its call must be ours.
      int at = peer * PAD;
      long seq = calls.get(at);
      long count = calls.get(at + 1);
      long meta = calls.get(at + 2);
      if (seq == sequence && calls.get(at) == seq
          && (count != call.count() || meta != call.meta())) {
        throw new CallMismatchException(rank, peer, phase, sequence, call.describe(), seq,
            new CallDescriptor(count, meta).describe());
      }
    }

    @Override
    public void abort(String reason) {
      abortSide(reason);
    }

    @Override
    public void leave(String reason) {
      leaveSide();
    }

    @Override
    public void close() {
      left = true;
    }
  }

  private final class Link extends Side implements NetworkLink {
    Link(int rank, PeerWatch watch) {
      super(rank, watch);
    }

    @Override
    public int ranksOnThisHost() {
      return size; // every rank is a thread of this JVM
    }

    @Override
    public void beginCall(long sequence, CallDescriptor call) {
      this.sequence = sequence;
      this.call = call;
    }

    @Override
    public void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
        String phase) {
      Channel ch = channel(rank, peer, lane);
      long tail = ch.counters.getPlain(0);
      while (tail - ch.counters.getAcquire(PAD) >= ch.slot.length) {
        waitOrFail(peer, deadline, phase, SLOT, lane);
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
      ch.sequence[i] = sequence;
      ch.count[i] = call.count();
      ch.meta[i] = call.meta();
      ch.counters.setRelease(0, tail + 1);
    }

    @Override
    public ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase) {
      Channel ch = channel(peer, rank, lane);
      long head = ch.counters.getPlain(PAD);
      while (ch.counters.getAcquire(0) <= head) {
        waitOrFail(peer, deadline, phase, MESSAGE, lane);
      }
      idle.reset();
      int i = (int) (head % ch.slot.length);
      if (ch.sequence[i] != sequence || ch.count[i] != call.count()
          || ch.meta[i] != call.meta()) {
        throw new CallMismatchException(rank, peer, phase, sequence, call.describe(),
            ch.sequence[i], new CallDescriptor(ch.count[i], ch.meta[i]).describe());
      }
      if (ch.length[i] != bytes) {
        throw new CollectiveException(rank, peer, phase, "expected a " + bytes
            + "-byte message on lane " + lane + " but got " + ch.length[i]
            + " bytes: the ranks are running different plans", null);
      }
      ByteBuffer slot = ch.slot[i];
      slot.clear();
      return slot;
    }

    @Override
    public void release(int peer, int lane, long deadline, String phase) {
      Channel ch = channel(peer, rank, lane);
      ch.counters.setRelease(PAD, ch.counters.getPlain(PAD) + 1);
    }

    @Override
    public void abort(String reason) {
      abortSide(reason);
    }

    @Override
    public void leave(String reason) {
      leaveSide();
    }

    @Override
    public void close() {
      left = true;
    }
  }

  /** One sender, one receiver: a ring of slots with a release/acquire head and tail. */
  private static final class Channel {
    final ByteBuffer[] slot;
    final long[] length;
    final long[] sequence;
    final long[] count;
    final long[] meta;
    final AtomicLongArray counters = new AtomicLongArray(2 * PAD); // [0]: tail, [PAD]: head

    Channel(int slots, int slotBytes) {
      slot = new ByteBuffer[slots];
      length = new long[slots];
      sequence = new long[slots];
      count = new long[slots];
      meta = new long[slots];
      for (int i = 0; i < slots; i++) {
        slot[i] = direct(slotBytes);
      }
    }
  }
}

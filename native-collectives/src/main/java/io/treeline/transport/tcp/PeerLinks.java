package io.treeline.transport.tcp;

import io.treeline.bootstrap.BootstrapException;
import io.treeline.bootstrap.Handshake;
import io.treeline.bootstrap.SecureAcceptor;
import io.treeline.core.Tuning;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import io.treeline.exec.NetworkLink;
import io.treeline.exec.PeerWatch;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * TCP links between this rank and every other rank of the group, one connection per pair
 * carrying every lane, all made by {@link #connect} at set-up (the lower rank connects, the
 * higher accepts). Accepting never blocks: a {@link SecureAcceptor} proves the job secret on
 * each connection with a short deadline, so a stranger's idle or garbage connection delays
 * no one. After set-up, one selector thread receives for all links, straight into the slots of
 * the lane a frame names (opt-in, a rank thread that waits on a link reads it itself while
 * the selector thread does not: {@link #pollRead}; one reader at a time per link), and the rank's own thread sends with non-blocking writes that back off until the
 * collective's deadline. Flow control is by credits: each lane of a link has
 * {@code slotsPerLane} receive slots, a sender sends only while it holds a credit, and a
 * receiver returns a credit when it releases a slot. So the receiver never has to stop reading
 * one lane because another is full, both trees of a double binary tree stay in flight, and a
 * receive is always posted, however far behind the sends are (seed 003's lesson).
 *
 * <p>Every DATA frame carries the sender's call (sequence number and {@code CallDescriptor}),
 * and a receiver whose own call differs fails naming both. Because every pair is linked, a
 * failure reaches every rank at once: a failing rank sends ABORT with its reason to all, a rank
 * that leaves in order sends CLOSE with its last call, and a connection that ends without either
 * means the process died. Each is recorded in the rank's {@link PeerWatch}, which every wait of
 * every transport polls. STATUS_REQUEST / STATUS frames carry the hang report
 * ({@link #describeWaits}): the selector thread answers for its rank, whatever the rank thread
 * is doing.
 *
 * <pre>
 * frame:  | type (4) | lane (4) | length (4) | pad (4) | sequence (8) | count (8) | meta (8) |
 *         | payload (length bytes: DATA data; ABORT, CLOSE, STATUS text) |
 * </pre>
 */
public final class PeerLinks implements NetworkLink {
  public static final int MAX_LANES = 64;
  /** Connections that may be proving the secret at once. */
  public static final int MAX_PENDING = 64;
  static final int DATA = 1;
  static final int CREDIT = 2;
  static final int ABORT = 3;
  static final int CLOSE = 4;
  static final int STATUS_REQUEST = 5;
  static final int STATUS = 6;
  static final int HEADER = 40;
  static final int MAX_TEXT = 4096;
  static final String PURPOSE = "treeline-peer";
  private static final String MESSAGE = "a message";
  private static final String CREDIT_WAIT = "a credit";
  private static final String ROOM = "room in the socket";
  private static final String CONNECT = "its connection";
  private static final String BEGIN = "beginning a call (returning credits)";
  /** A received message this long or longer has its credit returned at once ({@link #release}). */
  static final long EAGER_CREDIT_BYTES = 64 << 10;
  /** Bytes a link's reader takes from its socket per read, parsed from there ({@link Link#stage}). */
  static final int STAGE_BYTES = 16 << 10;
  /** A payload's rest this long or longer is read straight into its slot, not through the stage. */
  static final int DIRECT_BYTES = 4 << 10;
  private static final System.Logger LOG = System.getLogger("io.treeline.tcp");

  private final int rank;
  private final byte[] secret;
  private final InetSocketAddress[] addresses;
  private final int slotBytes;
  private final int slotsPerLane;
  private final Duration timeout;
  private final PeerWatch watch;
  private final Selector selector;
  private final Link[] links;
  private final ConcurrentHashMap<Integer, SocketChannel> accepted = new ConcurrentHashMap<>();
  private final Queue<Link> toRegister = new ConcurrentLinkedQueue<>();
  private final SecureAcceptor acceptor;
  private final Thread receiver;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
  private final boolean pollReads;
  /** The largest message whose wait reads the socket on the rank thread ({@link #pollRead}). */
  private final long pollMaxBytes = Tuning.TCP_POLL_MAX_BYTES.getLong();
  private final boolean deferCredits = Tuning.TCP_DEFER_CREDITS.getBoolean();
  /** Links this rank owes credits on (the rank thread's, like the credits themselves). */
  private int owingLinks;
  private boolean flushing;
  private volatile boolean connected;
  private volatile boolean statusPending;
  private volatile boolean closed;
  private boolean saidGoodbye;
  private long callSequence;
  private long callCount;
  private long callMeta;

  /** Links with a watch of their own (tests, a link used alone). */
  public PeerLinks(int rank, byte[] secret, ServerSocketChannel listener,
      InetSocketAddress[] addresses, int slotBytes, int slotsPerLane, Duration timeout)
      throws IOException {
    this(rank, secret, listener, addresses, slotBytes, slotsPerLane, timeout,
        new PeerWatch(rank, timeout));
  }

  /**
   * Starts accepting; {@link #connect} makes the links.
   *
   * @param listener this rank's bound listening channel (its address is in {@code addresses})
   * @param addresses every rank's listening address, by rank
   * @param timeout the collective timeout, quoted in errors
   * @param watch this rank's view of the group, shared with its other transports
   */
  public PeerLinks(int rank, byte[] secret, ServerSocketChannel listener,
      InetSocketAddress[] addresses, int slotBytes, int slotsPerLane, Duration timeout,
      PeerWatch watch) throws IOException {
    this.rank = rank;
    this.timeout = timeout;
    this.watch = watch;
    this.secret = secret.clone();
    this.addresses = addresses.clone();
    this.pollReads = pollReads(this.addresses, rank, Runtime.getRuntime().availableProcessors());
    this.slotBytes = slotBytes;
    this.slotsPerLane = slotsPerLane;
    this.links = new Link[addresses.length];
    this.selector = Selector.open();
    this.receiver = new Thread(this::receiveLoop, "treeline-tcp-receiver-" + rank);
    receiver.setDaemon(true);
    receiver.start();
    this.acceptor = new SecureAcceptor("rank " + rank, listener, secret, PURPOSE,
        Handshake.DEADLINE, MAX_PENDING, this::admit);
  }

  private void admit(int peer, SocketChannel ch) throws IOException {
    if (peer < 0 || peer >= rank) {
      throw new IOException("rank " + peer + " may not connect to rank " + rank
          + " (the lower rank of a pair connects)");
    }
    if (connected) {
      throw new IOException("rank " + peer + " connected after set-up");
    }
    if (accepted.putIfAbsent(peer, ch) != null) {
      throw new IOException("rank " + peer + " is connected already");
    }
  }

  /** Connections refused because they did not prove the secret, or came from the wrong rank. */
  @Override
  public int refusedConnections() {
    return acceptor.refused();
  }

  /**
   * Links this rank with every other rank by {@code deadline}: connects to the higher ranks,
   * waits for the lower ones. Fails naming the peer, at once when the group's watch hears of a
   * failure, and at the deadline otherwise.
   */
  public void connect(long deadline) {
    String phase = "set-up (connecting TCP links)";
    for (int p = rank + 1; p < links.length; p++) {
      links[p] = new Link(p, dial(p, deadline, phase));
    }
    for (int p = 0; p < rank; p++) {
      SocketChannel ch;
      boolean waiting = false;
      while ((ch = accepted.get(p)) == null) {
        long now = System.nanoTime();
        if (!waiting) {
          watch.waiting(p, phase, CONNECT, now);
          waiting = true;
        }
        check(p, phase, deadline, now, false);
        idle.idle();
      }
      idle.reset();
      watch.waited();
      links[p] = new Link(p, ch);
    }
    connected = true;
    for (Link l : links) {
      if (l != null) {
        toRegister.add(l);
      }
    }
    selector.wakeup();
  }

  /** Connects to {@code peer} and proves the secret, without blocking past a poll. */
  private SocketChannel dial(int peer, long deadline, String phase) {
    SocketChannel ch = null;
    try {
      ch = SocketChannel.open();
      ch.socket().connect(addresses[peer], (int) Math.max(1, Math.min(Integer.MAX_VALUE,
          (deadline - System.nanoTime()) / 1_000_000)));
      configure(ch);
      ch.configureBlocking(false);
      ByteBuffer nonce = ByteBuffer.allocate(Handshake.NONCE);
      exchange(ch, peer, nonce, false, deadline, phase);
      ByteBuffer answer = Handshake.answer(secret, PURPOSE, nonce.array(), rank);
      exchange(ch, peer, answer, true, deadline, phase);
      ByteBuffer verdict = ByteBuffer.allocate(Handshake.VERDICT);
      exchange(ch, peer, verdict, false, deadline, phase);
      if (verdict.getInt(0) != 1) {
        throw Handshake.refusedBy(PURPOSE, rank);
      }
      return ch;
    } catch (IOException e) {
      closeQuietly(ch);
      throw new CollectiveException(rank, peer, phase, "cannot connect to rank " + peer + " at "
          + addresses[peer] + ": " + BootstrapException.describe(e) + " (timeout "
          + timeout.toMillis() + " ms)", e);
    } catch (RuntimeException e) {
      closeQuietly(ch);
      throw e;
    }
  }

  private void exchange(SocketChannel ch, int peer, ByteBuffer b, boolean write, long deadline,
      String phase) throws IOException {
    watch.waiting(peer, phase, CONNECT, System.nanoTime());
    while (b.hasRemaining()) {
      int n = write ? ch.write(b) : ch.read(b);
      if (n < 0) {
        throw new java.io.EOFException("rank " + peer + " closed the connection during the "
            + "handshake");
      }
      if (n == 0) {
        check(peer, phase, deadline, System.nanoTime(), true);
        idle.idle();
      }
    }
    idle.reset();
    watch.waited();
  }

  /** A set-up wait's poll: closed, a failure heard of, or the deadline (dialing or accepting). */
  private void check(int peer, String phase, long deadline, long now, boolean dialing) {
    if (closed) {
      throw new CollectiveException(rank, peer, phase, "the communicator was closed", null);
    }
    String why = watch.poll(now);
    if (why != null) {
      throw watch.failed(phase, why);
    }
    if (now - deadline > 0) {
      throw CollectiveException.timeout(rank, peer, phase, dialing ? "rank " + peer
          + " to answer the handshake" : "rank " + peer + " to connect to "
          + addresses[rank], timeout);
    }
  }

  // ---- the rank thread's side ----------------------------------------------------------------

  /** The call the rank thread is entering; stamped on its frames and checked on receipt. */
  @Override
  public void beginCall(long sequence, CallDescriptor call) {
    beginCall(sequence, call.count(), call.meta());
  }

  /** {@link #beginCall(long, CallDescriptor)} for callers that keep the descriptor unpacked. */
  public void beginCall(long sequence, long count, long meta) {
    flushAllCredits(null, System.nanoTime() + timeout.toNanos(), BEGIN);
    callSequence = sequence;
    callCount = count;
    callMeta = meta;
  }

  /** Send {@code bytes} of {@code src} from {@code offset} on {@code lane}; rank thread only. */
  @Override
  public void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
      String phase) {
    Link l = link(peer, phase);
    checkLane(peer, lane, phase);
    // A link whose peer has aborted or closed, or a group that has failed, takes no more
    // frames: a frame is one write now, and the first write to a closed socket succeeds (the
    // peer's reset comes back after it), so the failure would otherwise surface only at a later
    // step, after the rank had computed on (a rank resumed from a stall met its peers' aborts
    // only at its third send, 2026-12-06)
    String failed = l.failure;
    if (failed != null) {
      throw new CollectiveException(rank, peer, phase, "the connection to rank " + peer
          + " failed before a message on lane " + lane + " could be sent: " + failed
          + " (timeout " + timeout.toMillis() + " ms not reached)", null);
    }
    String group = watch.failure();
    if (group != null) {
      throw watch.failed(phase, group);
    }
    if (l.sent[lane] >= slotsPerLane + l.credits.getAcquire(lane)) {
      boolean waiting = false;
      while (l.sent[lane] >= slotsPerLane + l.credits.getAcquire(lane)) {
        waiting = waitOrFail(l, deadline, phase, CREDIT_WAIT, lane, waiting);
      }
      idle.reset();
      watch.waited();
    }
    lockWrite(l);
    int savedLimit = src.limit();
    int savedPos = src.position();
    try {
      l.header.clear();
      l.header.putInt(DATA).putInt(lane).putInt((int) bytes).putInt(0).putLong(callSequence)
          .putLong(callCount).putLong(callMeta).flip();
      l.takeCredits(); // the credits this rank owes the peer ride in the same write
      src.limit((int) (offset + bytes)).position((int) offset);
      l.frame[0] = l.creditOut;
      l.frame[1] = l.header;
      l.frame[2] = src;
      write(l, l.frame, HEADER + bytes + l.creditOut.remaining(), deadline, phase);
    } finally {
      l.frame[2] = null;
      src.limit(savedLimit).position(savedPos);
      l.writing.setRelease(0);
    }
    l.sent[lane]++;
  }

  /** The next message from {@code peer} on {@code lane}, valid until {@link #release}. */
  @Override
  public ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase) {
    Link l = link(peer, phase);
    checkLane(peer, lane, phase);
    Lane in = l.lane(lane, slotsPerLane, slotBytes);
    long head = in.counters.getPlain(Lane.HEAD);
    boolean waiting = false;
    while (true) {
      // The receiver thread publishes a message (TAIL) before it records a failure it read
      // after it on the same socket (a peer that sent its last message and then closed), so
      // the failure is read first: a message published before it is seen by the check after.
      String failed = l.failure;
      String group = watch.failure(); // the same order for a failure heard on any link
      if (in.counters.getAcquire(Lane.TAIL) > head) {
        break;
      }
      if (failed != null) {
        throw broken(l, phase, "a message on lane " + lane, failed);
      }
      if (group != null) {
        throw watch.failed(phase, group);
      }
      waiting = idleOrFail(l, deadline, phase, MESSAGE, lane, waiting, bytes <= pollMaxBytes);
    }
    if (waiting) {
      idle.reset();
      watch.waited();
    }
    int i = (int) (head % slotsPerLane);
    if (in.sequence[i] != callSequence || in.count[i] != callCount || in.meta[i] != callMeta) {
      throw new CallMismatchException(rank, peer, phase, callSequence,
          new CallDescriptor(callCount, callMeta).describe(), in.sequence[i],
          new CallDescriptor(in.count[i], in.meta[i]).describe());
    }
    if (in.length[i] != bytes) {
      throw new CollectiveException(rank, peer, phase, "expected a " + bytes + "-byte message"
          + " on lane " + lane + " but got " + in.length[i] + " bytes: the ranks are running"
          + " different plans", null);
    }
    ByteBuffer slot = in.slots[i];
    slot.clear();
    return slot;
  }

  /**
   * Give the slot of the last receive back and owe the sender a credit. The credit of a small
   * message is not written at once: it rides with this rank's next frame to the peer (the
   * answer of a tree's hop goes back the same link), or goes alone when this rank next waits
   * for anything or begins a call ({@link #flushAllCredits}), so the sender never waits on a
   * credit while this rank does not make progress. A small message's hop cost two frames and
   * three syscalls each way (header, payload, credit) before; now one write. The credit of a
   * large message ({@link #EAGER_CREDIT_BYTES} and more: a pipeline's chunk, whose sender may
   * be out of slots) goes at once.
   */
  @Override
  public void release(int peer, int lane, long deadline, String phase) {
    Link l = links[peer];
    Lane in = l.lanes[lane];
    long head = in.counters.getPlain(Lane.HEAD);
    long length = in.length[(int) (head % slotsPerLane)];
    in.counters.setRelease(Lane.HEAD, head + 1);
    if (l.owed[lane]++ == 0 && l.owedLanes++ == 0) {
      owingLinks++;
    }
    if (length >= EAGER_CREDIT_BYTES || !deferCredits) {
      flushCredits(l, deadline, phase);
    }
  }

  @Override
  public void flush(long deadline, String phase) {
    flushAllCredits(null, deadline, phase);
  }

  /** Write the credits owed on every link but {@code except}; rank thread only. */
  private void flushAllCredits(Link except, long deadline, String phase) {
    if (owingLinks == 0 || flushing) {
      return;
    }
    flushing = true;
    try {
      for (Link l : links) {
        if (l != null && l != except && l.owedLanes > 0) {
          flushCredits(l, deadline, phase);
        }
      }
    } finally {
      flushing = false;
    }
  }

  private void flushCredits(Link l, long deadline, String phase) {
    lockWrite(l);
    try {
      l.takeCredits();
      l.frame[0] = l.creditOut;
      l.frame[1] = l.empty;
      l.frame[2] = l.empty;
      write(l, l.frame, l.creditOut.remaining(), deadline, phase);
    } catch (CollectiveException e) {
      // The data has arrived; only the peer's future sends need these credits. A peer that has
      // already finished (its last message was this one) may have closed the link: remember,
      // and fail the next use of the link instead of this collective.
      if (l.failure == null) {
        l.failure = "returning a credit failed: " + e.getMessage();
      }
    } finally {
      l.writing.setRelease(0);
    }
  }

  /** Write all of {@code frame} ({@code total} bytes) on {@code l}; caller holds its lock. */
  private void write(Link l, ByteBuffer[] frame, long total, long deadline, String phase) {
    try {
      boolean waiting = false;
      long left = total;
      while (left > 0) {
        long n = l.channel.write(frame);
        left -= n;
        if (n == 0) {
          if (!waiting) {
            flushAllCredits(l, deadline, phase); // not l: its lock is held (the frame has them)
          }
          waiting = waitOrFail(l, deadline, phase, ROOM, -1, waiting);
        }
      }
      if (waiting) {
        idle.reset();
        watch.waited();
      }
    } catch (IOException e) {
      throw new CollectiveException(rank, l.peer, phase, "the connection to rank " + l.peer
          + " broke while sending (" + BootstrapException.describe(e) + "): "
          + whyBroken(l), e);
    }
  }

  /**
   * Why a link broke under a send: the peer's ABORT or CLOSE, if the receiver thread has it or
   * reads it within 100 ms (a resumed rank's first write meets a closed socket before its
   * receiver has read the abort waiting in it), else a process that died.
   */
  private String whyBroken(Link l) {
    long until = System.nanoTime() + 100_000_000L;
    while (l.failure == null && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
      Thread.yield();
    }
    String f = l.failure;
    return f != null ? f : "rank " + l.peer + "'s process died or closed the link";
  }

  private void checkLane(int peer, int lane, String phase) {
    if (lane < 0 || lane >= MAX_LANES) {
      throw new CollectiveException(rank, peer, phase, "lane " + lane + " beyond the "
          + MAX_LANES + " a link supports", null);
    }
  }

  private boolean waitOrFail(Link l, long deadline, String phase, String what, int lane,
      boolean waiting) {
    String failed = l.failure;
    if (failed != null) {
      throw broken(l, phase, what + (lane >= 0 ? " on lane " + lane : ""), failed);
    }
    return idleOrFail(l, deadline, phase, what, lane, waiting, false);
  }

  private CollectiveException broken(Link l, String phase, String what, String failure) {
    return new CollectiveException(rank, l.peer, phase, "the connection to rank " + l.peer
        + " failed while waiting for " + what + ": " + failure + " (timeout "
        + timeout.toMillis() + " ms not reached)", null);
  }

  /**
   * A waiting rank thread reads its peer's socket itself when the receiver thread is not
   * reading it, so the frame it waits for (or the credit) lands without the receiver's wake-up
   * from {@code select} and the hand-off between the two threads: Open MPI's TCP ranks read
   * their own sockets in their progress loop, and answered 4-64 KiB allreduces across two
   * loopback "nodes" in 15-35 us where Treeline took 58-91 (2-core VM, 2026-12-05). A
   * non-blocking read of what the socket holds, never a wait. Only where the cores allow
   * ({@link #pollReads}: on a 2-core VM with 2 ranks, forced on, the two readers of a link took
   * each other's core) and only in the wait for a message of at most
   * {@code -Dtreeline.tcpPollMaxBytes} (64 KiB): on 16 cores at 2x2 the rank thread reading
   * every wait was 0.75-0.99x the receiver thread's time to 64 KiB but 1.12-1.37x from 256 KiB,
   * where the transfer, not the hand-off, is the cost and the second reader only takes a core
   * from the receiver (2026-12-06).
   */
  private void pollRead(Link l) {
    if (!pollReads || l.failure != null || !l.reading.compareAndSet(0, 1)) {
      return;
    }
    try {
      l.readAvailable(slotsPerLane, slotBytes); // false: the loss is recorded in l.failure
    } catch (IOException | RuntimeException e) {
      lost(l, "the connection to rank " + l.peer + " failed: " + BootstrapException.describe(e));
    } finally {
      l.reading.setRelease(0);
    }
    if (statusPending) {
      selector.wakeup(); // a STATUS_REQUEST read here: the receiver thread answers it
    }
  }

  /**
   * Whether waiting rank threads read their sockets ({@link #pollRead}).
   * {@code -Dtreeline.tcpPollRead}: {@code auto} (the default) turns it on when every rank of
   * this host (the ranks whose address is this rank's) and its receiver thread can have a core,
   * so never on a 2-core VM with 2 ranks, where forced on it did not pay (2026-12-05);
   * {@code true} and {@code false} force it.
   */
  static boolean pollReads(InetSocketAddress[] addresses, int rank, int cores) {
    if (!Tuning.TCP_POLL_READ.get().equals("auto")) {
      return Tuning.TCP_POLL_READ.getBoolean();
    }
    return 2L * ranksHere(addresses, rank) <= cores;
  }

  /** The ranks whose address is {@code rank}'s: this host's (simulated nodes included). */
  static int ranksHere(InetSocketAddress[] addresses, int rank) {
    int here = 0;
    for (InetSocketAddress a : addresses) {
      if (a != null && addresses[rank] != null && a.getAddress() != null
          && a.getAddress().equals(addresses[rank].getAddress())) {
        here++;
      }
    }
    return here;
  }

  @Override
  public int ranksOnThisHost() {
    return ranksHere(addresses, rank);
  }

  /**
   * One idle step of a wait on {@code l}; returns true (the wait is published). {@code poll}:
   * the wait is for a small message, which this thread may read itself ({@link #pollRead}).
   */
  private boolean idleOrFail(Link l, long deadline, String phase, String what, int lane,
      boolean waiting, boolean poll) {
    if (!waiting && what != ROOM) {
      flushAllCredits(null, deadline, phase); // never wait while a peer may wait for a credit
    }
    if (poll) {
      pollRead(l);
    }
    long now = System.nanoTime();
    if (!waiting) {
      watch.waiting(l.peer, phase, what, now);
    }
    if (closed) {
      throw new CollectiveException(rank, l.peer, phase, "the communicator was closed", null);
    }
    String why = watch.poll(now);
    if (why != null) {
      throw watch.failed(phase, why);
    }
    if (now - deadline > 0) {
      throw CollectiveException.timeout(rank, l.peer, phase, what + (lane >= 0 ? " on lane "
          + lane : "") + " from rank " + l.peer, timeout);
    }
    idle.idle();
    return true;
  }

  private Link link(int peer, String phase) {
    Link l = peer >= 0 && peer < links.length ? links[peer] : null;
    if (l == null) {
      throw new CollectiveException(rank, peer, phase, peer == rank || peer < 0
          || peer >= links.length ? "no such peer" : "no link to rank " + peer
          + " (connect() was not called)", null);
    }
    return l;
  }

  private static void configure(SocketChannel ch) throws IOException {
    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
    ch.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
    ch.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
  }

  /** The rank thread's side of a link's write lock (the receiver thread writes STATUS too). */
  private static void lockWrite(Link l) {
    while (!l.writing.compareAndSet(0, 1)) {
      Thread.onSpinWait(); // held for one short STATUS frame at most
    }
  }

  // ---- status: who waits for whom ------------------------------------------------------------

  /**
   * Asks every linked rank what it is doing, waits up to {@code budget} for the answers, and
   * returns the report: one line per rank (its call, phase and the peer it waits on), then who
   * is behind. Rank thread only; for a collective that timed out.
   */
  @Override
  public String describeWaits(Duration budget) {
    long now = System.nanoTime();
    for (Link l : links) {
      if (l == null) {
        continue;
      }
      l.status = null;
      if (l.failure == null) {
        try {
          lockWrite(l);
          try {
            writeControl(l, STATUS_REQUEST, 0, 0, 0, new byte[0]);
          } finally {
            l.writing.setRelease(0);
          }
        } catch (IOException e) {
          // no answer will come; the report says so
        }
      }
    }
    long until = now + budget.toNanos();
    for (Link l : links) {
      while (l != null && l.failure == null && l.status == null
          && System.nanoTime() - until < 0) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
      }
    }
    long[] seq = new long[links.length];
    boolean[] inCall = new boolean[links.length];
    boolean[] answered = new boolean[links.length];
    int[] waitsOn = new int[links.length];
    boolean[] gone = new boolean[links.length];
    StringBuilder b = new StringBuilder("who waits for whom (ranks in topology order):");
    for (int p = 0; p < links.length; p++) {
      b.append("\n  rank ").append(p).append(": ");
      if (p == rank) {
        seq[p] = watch.sequence();
        inCall[p] = watch.inCall();
        waitsOn[p] = watch.waitPeer();
        answered[p] = true;
        b.append(watch.describe(System.nanoTime())).append(" (this rank)");
        continue;
      }
      Link l = links[p];
      String s = l == null ? null : l.status;
      if (s != null) {
        seq[p] = l.statusSequence;
        inCall[p] = l.statusInCall;
        waitsOn[p] = l.statusWaitPeer;
        answered[p] = true;
        b.append(s);
      } else if (l != null && l.failure != null) {
        gone[p] = true;
        b.append("gone: ").append(l.failure);
      } else {
        b.append("no answer within ").append(budget.toMillis()).append(" ms (stopped, hung "
            + "or overloaded)");
      }
    }
    b.append('\n').append(behind(seq, inCall, waitsOn, answered, gone));
    return b.toString();
  }

  /**
   * Names the ranks the others wait for: those in an older call and those that never answered;
   * failing both, those in the call that wait for no one while others wait for them.
   */
  static String behind(long[] seq, boolean[] inCall, int[] waitsOn, boolean[] answered,
      boolean[] gone) {
    long newest = Long.MIN_VALUE;
    for (int p = 0; p < seq.length; p++) {
      if (answered[p]) {
        newest = Math.max(newest, seq[p]);
      }
    }
    StringBuilder late = new StringBuilder();
    StringBuilder silent = new StringBuilder();
    for (int p = 0; p < seq.length; p++) {
      if (gone[p]) {
        continue; // its own report (in its abort above) says where it was
      }
      if (!answered[p]) {
        silent.append(silent.length() > 0 ? ", " : "").append(p);
      } else if (seq[p] < newest) {
        late.append(late.length() > 0 ? ", " : "").append(p).append(" (")
            .append(inCall[p] ? "in call #" : "last call #").append(seq[p]).append(')');
      }
    }
    StringBuilder out = new StringBuilder("behind: ");
    if (late.length() > 0) {
      out.append("rank ").append(late).append(", while others are in call #").append(newest);
    }
    if (silent.length() > 0) {
      out.append(late.length() > 0 ? "; " : "").append("rank ").append(silent)
          .append(" did not answer");
    }
    if (late.length() == 0 && silent.length() == 0) {
      StringBuilder stuck = new StringBuilder();
      for (int p = 0; p < seq.length; p++) {
        boolean waitedFor = false;
        for (int q = 0; q < seq.length; q++) {
          waitedFor |= answered[q] && waitsOn[q] == p && q != p;
        }
        if (answered[p] && inCall[p] && waitsOn[p] < 0 && waitedFor && !gone[p]) {
          stuck.append(stuck.length() > 0 ? ", " : "").append(p);
        }
      }
      if (stuck.length() > 0) {
        out.append("rank ").append(stuck).append(" (in call #").append(newest)
            .append(" but waiting for no one while others wait for it: its thread is busy or "
            + "stuck)");
      } else {
        out.append("no rank: every rank is in call #").append(newest)
            .append(" (look for a cycle in the waits above)");
      }
    }
    return out.toString();
  }

  /** Blocking-with-a-bound write of a control frame; caller holds the write lock. */
  private void writeControl(Link l, int type, long sequence, long count, long meta, byte[] text)
      throws IOException {
    int n = Math.min(text.length, MAX_TEXT);
    ByteBuffer f = ByteBuffer.allocate(HEADER + n);
    f.putInt(type).putInt(0).putInt(n).putInt(0).putLong(sequence).putLong(count).putLong(meta)
        .put(text, 0, n).flip();
    long deadline = System.nanoTime() + 100_000_000L;
    while (f.hasRemaining() && System.nanoTime() - deadline < 0) {
      if (l.channel.write(f) == 0) {
        Thread.onSpinWait();
      }
    }
    if (f.hasRemaining()) {
      throw new IOException("rank " + l.peer + " is not reading");
    }
  }

  /** Receiver thread: answer the STATUS_REQUESTs it can write now; the rest on a later turn. */
  private void answerStatus() {
    statusPending = false;
    for (Link l : links) {
      if (l == null || !l.statusRequested) {
        continue;
      }
      if (!l.writing.compareAndSet(0, 1)) {
        statusPending = true; // the rank thread is sending on this link
        continue;
      }
      try {
        l.statusRequested = false;
        writeControl(l, STATUS, watch.sequence(), watch.inCall() ? 1 : 0, watch.waitPeer(),
            watch.describe(System.nanoTime()).getBytes(StandardCharsets.UTF_8));
      } catch (IOException e) {
        // the requester is gone; nothing to answer
      } finally {
        l.writing.setRelease(0);
      }
    }
  }

  // ---- background thread ---------------------------------------------------------------------

  private void receiveLoop() {
    try {
      while (!closed) {
        Link reg;
        while ((reg = toRegister.poll()) != null) {
          reg.channel.register(selector, SelectionKey.OP_READ, reg);
        }
        selector.select(statusPending ? 5 : 100);
        boolean skipped = false;
        for (SelectionKey k : selector.selectedKeys()) {
          Link l = (Link) k.attachment();
          if (!l.reading.compareAndSet(0, 1)) {
            skipped = true; // its rank thread is reading it (pollRead)
            continue;
          }
          try {
            if (!l.readAvailable(slotsPerLane, slotBytes)) {
              k.cancel();
            }
          } catch (IOException | RuntimeException e) {
            lost(l, "the connection to rank " + l.peer + " failed: "
                + BootstrapException.describe(e));
            k.cancel();
          } finally {
            l.reading.setRelease(0);
          }
        }
        selector.selectedKeys().clear();
        if (skipped) {
          // the socket stays readable while the rank thread drains it: give way, not spin (a
          // 20 us park here cost 16 MiB on 2 loopback nodes 3x: data sat unread for its length)
          Thread.yield();
        }
        if (statusPending) {
          answerStatus();
        }
      }
    } catch (IOException | ClosedSelectorException e) {
      if (!closed) {
        LOG.log(System.Logger.Level.ERROR, "rank " + rank + ": the TCP receiver failed", e);
        for (Link l : links) {
          if (l != null) {
            l.failure = "receiver thread failed: " + e;
          }
        }
        watch.fail(rank, "rank " + rank + "'s TCP receiver failed: " + e);
      }
    }
  }

  /** A link that ended without a goodbye: the peer died, or spoke nonsense. */
  private void lost(Link l, String why) {
    if (l.failure == null) {
      l.failure = why;
    }
    if (!l.goodbye && !closed) {
      watch.fail(l.peer, why);
    }
  }

  /**
   * Tell every peer that this rank's collective failed, and why; best effort, never blocks
   * beyond a short bounded write per link.
   */
  @Override
  public void abort(String reason) {
    goodbye(ABORT, reason);
  }

  /** Tell every peer that this rank leaves in order, after its last call. */
  @Override
  public void leave(String reason) {
    goodbye(CLOSE, reason);
  }

  private synchronized void goodbye(int type, String reason) {
    if (saidGoodbye) {
      return;
    }
    saidGoodbye = true;
    byte[] r = reason.getBytes(StandardCharsets.UTF_8);
    for (Link l : links) {
      if (l == null || l.failure != null) {
        continue;
      }
      long until = System.nanoTime() + 100_000_000L;
      boolean locked;
      while (!(locked = l.writing.compareAndSet(0, 1)) && System.nanoTime() - until < 0) {
        Thread.onSpinWait();
      }
      if (!locked) {
        continue; // a rank thread stuck in a send on this link: the close below tells the peer
      }
      try {
        writeControl(l, type, callSequence, 0, 0, r);
      } catch (IOException e) {
        // the peer is gone already
      } finally {
        l.writing.setRelease(0);
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    acceptor.close();
    selector.wakeup();
    try {
      receiver.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    closeQuietly(selector);
    for (Link l : links) {
      if (l != null) {
        closeQuietly(l.channel);
      }
    }
    for (SocketChannel ch : accepted.values()) {
      closeQuietly(ch);
    }
    accepted.clear();
  }

  private static void closeQuietly(java.io.Closeable c) {
    if (c != null) {
      try {
        c.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }

  /** Receive slots of one lane: written by the receiver thread, consumed by the rank thread. */
  private static final class Lane {
    static final int TAIL = 0;
    static final int HEAD = 16; // its own cache line
    final ByteBuffer[] slots;
    final long[] length;
    final long[] sequence;
    final long[] count;
    final long[] meta;
    final AtomicLongArray counters = new AtomicLongArray(32);

    Lane(int n, int bytes) {
      slots = new ByteBuffer[n];
      length = new long[n];
      sequence = new long[n];
      count = new long[n];
      meta = new long[n];
      for (int i = 0; i < n; i++) {
        slots[i] = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
      }
    }
  }

  private final class Link {
    final int peer;
    final SocketChannel channel;
    final ByteBuffer header = ByteBuffer.allocateDirect(HEADER);
    /** The credit frames a write carries before its own frame ({@link #takeCredits}). */
    final ByteBuffer creditOut = ByteBuffer.allocateDirect(HEADER * MAX_LANES);
    final ByteBuffer empty = ByteBuffer.allocateDirect(0);
    /** One gathering write: credits, header, payload. */
    final ByteBuffer[] frame = new ByteBuffer[3];
    /** Credits this rank owes the peer per lane, not yet written; the rank thread's. */
    final int[] owed = new int[MAX_LANES];
    int owedLanes;
    final long[] sent = new long[MAX_LANES];
    final AtomicLongArray credits = new AtomicLongArray(MAX_LANES);
    final Lane[] lanes = new Lane[MAX_LANES];
    /** 1 while a thread writes a frame: the rank thread, or the receiver answering STATUS. */
    final AtomicInteger writing = new AtomicInteger();
    /** 1 while a thread reads frames: the receiver thread, or a waiting rank thread. */
    final AtomicInteger reading = new AtomicInteger();
    // the reading thread's state (held under reading): the frame being read
    final ByteBuffer inHeader = ByteBuffer.allocateDirect(HEADER);
    /**
     * What the last read took from the socket and the parse has not used yet: one read brings
     * a small frame's header and payload (and the credits before it) at once, where a read per
     * header and per payload cost two or three syscalls a frame. A payload's rest of
     * {@link #DIRECT_BYTES} or more is read straight into its slot.
     */
    final ByteBuffer stage = ByteBuffer.allocateDirect(STAGE_BYTES).flip();
    ByteBuffer inPayload;
    int inType;
    int inLane;
    long inLength;
    long inSequence;
    long inCount;
    long inMeta;
    volatile String failure;
    volatile boolean goodbye;
    volatile boolean statusRequested;
    volatile String status;
    volatile long statusSequence;
    volatile boolean statusInCall;
    volatile int statusWaitPeer = -1;

    Link(int peer, SocketChannel channel) {
      this.peer = peer;
      this.channel = channel;
    }

    /** Put the owed credits into {@link #creditOut} (flipped; empty when none); rank thread. */
    void takeCredits() {
      creditOut.clear();
      if (owedLanes > 0) {
        for (int lane = 0; lane < MAX_LANES; lane++) {
          int c = owed[lane];
          if (c > 0) {
            creditOut.putInt(CREDIT).putInt(lane).putInt(c).putInt(0).putLong(0).putLong(0)
                .putLong(0);
            owed[lane] = 0;
          }
        }
        owedLanes = 0;
        owingLinks--;
      }
      creditOut.flip();
    }

    synchronized Lane lane(int lane, int n, int bytes) {
      Lane l = lanes[lane];
      if (l == null) {
        l = new Lane(n, bytes);
        lanes[lane] = l;
      }
      return l;
    }

    /** Reads what the socket has; false when the link is done. Only under {@link #reading}. */
    boolean readAvailable(int n, int bytes) throws IOException {
      while (true) {
        if (!stage.hasRemaining()) {
          int r;
          if (inPayload != null && inPayload.remaining() >= DIRECT_BYTES) {
            r = channel.read(inPayload); // a large payload: no copy through the stage
          } else {
            stage.clear();
            r = channel.read(stage);
            stage.flip();
          }
          if (r < 0) {
            lost(this, inPayload == null ? "rank " + peer + "'s connection closed without a "
                + "goodbye: its process died or was killed" : "rank " + peer + "'s connection "
                + "closed in the middle of a frame: its process died or was killed");
            return false;
          }
          if (r == 0) {
            return true; // the socket is drained, and so is the stage
          }
        }
        if (inPayload == null) {
          move(stage, inHeader);
          if (inHeader.hasRemaining()) {
            continue;
          }
          if (!header(n, bytes)) {
            continue; // a credit
          }
        }
        move(stage, inPayload);
        if (inPayload.hasRemaining()) {
          continue;
        }
        if (inType != DATA) {
          ByteBuffer text = inPayload;
          inPayload = null;
          if (!control(new String(text.array(), 0, text.position(), StandardCharsets.UTF_8))) {
            return false;
          }
          continue;
        }
        Lane l = lanes[inLane];
        long tail = l.counters.getPlain(Lane.TAIL);
        int slot = (int) (tail % n);
        l.length[slot] = inLength;
        l.sequence[slot] = inSequence;
        l.count[slot] = inCount;
        l.meta[slot] = inMeta;
        l.counters.setRelease(Lane.TAIL, tail + 1);
        inPayload = null;
      }
    }

    /** The bytes of {@code src} that fit {@code dst}, moved; allocates nothing. */
    private static void move(ByteBuffer src, ByteBuffer dst) {
      int k = Math.min(src.remaining(), dst.remaining());
      if (k == 0) {
        return;
      }
      int limit = src.limit();
      src.limit(src.position() + k);
      dst.put(src);
      src.limit(limit);
    }

    /**
     * A whole header is in {@link #inHeader}: take a credit (false), or set up the payload's
     * destination (true).
     */
    private boolean header(int n, int bytes) throws IOException {
      inHeader.flip();
      int type = inHeader.getInt();
      int lane = inHeader.getInt();
      int len = inHeader.getInt();
      inHeader.getInt();
      long seq = inHeader.getLong();
      long cnt = inHeader.getLong();
      long mt = inHeader.getLong();
      inHeader.clear();
      if (type == CREDIT) {
        if (lane < 0 || lane >= MAX_LANES || len < 1 || len > n) {
          throw new IOException("refused a credit frame for lane " + lane + " of " + len
              + " from rank " + peer);
        }
        credits.setRelease(lane, credits.getPlain(lane) + len);
        return false;
      }
      inType = type;
      inSequence = seq;
      inCount = cnt;
      inMeta = mt;
      inLength = len;
      if (type == ABORT || type == CLOSE || type == STATUS || type == STATUS_REQUEST) {
        if (len < 0 || len > MAX_TEXT) {
          throw new IOException("refused a control frame (type " + type + ") of " + len
              + " bytes from rank " + peer);
        }
        inPayload = ByteBuffer.allocate(len);
      } else if (type == DATA) {
        if (lane < 0 || lane >= MAX_LANES) {
          throw new IOException("frame for lane " + lane + " from rank " + peer);
        }
        if (len < 0 || len > bytes) {
          throw new IOException("refused a frame of type " + type + " and " + len
              + " bytes from rank " + peer + " (slots hold " + bytes + ")");
        }
        Lane l = lane(lane, n, bytes);
        long tail = l.counters.getPlain(Lane.TAIL);
        if (tail - l.counters.getAcquire(Lane.HEAD) >= n) {
          throw new IOException("rank " + peer + " sent on lane " + lane
              + " without a credit");
        }
        inPayload = l.slots[(int) (tail % n)];
        inPayload.clear().limit(len);
        inLane = lane;
      } else {
        throw new IOException("refused a frame of unknown type " + type + " from rank "
            + peer);
      }
      return true;
    }

    /** A control frame has arrived; false when the link is done. */
    private boolean control(String text) {
      switch (inType) {
        case ABORT -> {
          goodbye = true;
          failure = "rank " + peer + " aborted: " + text;
          watch.fail(peer, failure);
          return false;
        }
        case CLOSE -> {
          goodbye = true;
          failure = "rank " + peer + " closed its communicator after call #" + inSequence + ": "
              + text;
          watch.left(peer, inSequence);
          return false;
        }
        case STATUS_REQUEST -> {
          statusRequested = true;
          statusPending = true;
          return true;
        }
        default -> { // STATUS
          statusSequence = inSequence;
          statusInCall = inCount != 0;
          statusWaitPeer = (int) inMeta;
          status = text;
          return true;
        }
      }
    }
  }

  /** For tests: the rank's listening addresses. */
  List<InetSocketAddress> addresses() {
    return List.of(addresses);
  }
}

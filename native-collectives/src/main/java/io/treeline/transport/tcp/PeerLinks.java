package io.treeline.transport.tcp;

import io.treeline.bootstrap.Handshake;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CollectiveException;
import io.treeline.exec.NetworkLink;
import java.io.DataInputStream;
import java.io.DataOutputStream;
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
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * TCP links between this rank and its peers, one connection per peer pair carrying every lane.
 *
 * <p>The lower rank of a pair connects, the higher accepts, both when they first need the
 * link; the connector proves the job secret before the connection carries anything. After
 * that, one selector thread receives for all links, straight into the slots of the lane a
 * frame names, and the rank's own thread sends with non-blocking writes that back off until
 * the collective's deadline. Flow control is by credits: each lane of a link has
 * {@code slotsPerLane} receive slots, a sender sends only while it holds a credit, and a
 * receiver returns a credit when it releases a slot. So the receiver never has to stop reading
 * one lane because another is full, both trees of a double binary tree stay in flight, and a
 * receive is always posted, however far behind the sends are (seed 003's lesson).
 *
 * <p>Every DATA frame carries the sender's call (sequence number and {@code CallDescriptor}),
 * and a receiver whose own call differs fails naming both: ranks that make different collective
 * calls fail instead of hanging or mixing data. A rank whose collective fails sends an ABORT
 * frame with the reason to every linked peer before it closes.
 *
 * <pre>
 * frame:  | type (4) | lane (4) | length (4) | pad (4) | sequence (8) | count (8) | meta (8) |
 *         | payload (length bytes: DATA data, ABORT reason) |
 * </pre>
 */
public final class PeerLinks implements NetworkLink {
  public static final int MAX_LANES = 64;
  private static final int DATA = 1;
  private static final int CREDIT = 2;
  private static final int ABORT = 3;
  private static final int HEADER = 40;
  private static final int MAX_REASON = 4096;
  private static final String PURPOSE = "treeline-peer";
  private static final System.Logger LOG = System.getLogger("io.treeline.tcp");

  private final int rank;
  private final byte[] secret;
  private final InetSocketAddress[] addresses;
  private final int slotBytes;
  private final int slotsPerLane;
  private final java.time.Duration timeout;
  private final ServerSocketChannel listener;
  private final Selector selector;
  private final Link[] links;
  private final ConcurrentHashMap<Integer, SocketChannel> accepted = new ConcurrentHashMap<>();
  private final Queue<Link> toRegister = new ConcurrentLinkedQueue<>();
  private final Thread acceptor;
  private final Thread receiver;
  private final AtomicInteger refused = new AtomicInteger();
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
  private volatile boolean closed;
  private long callSequence;
  private long callCount;
  private long callMeta;

  /**
   * @param listener this rank's bound listening channel (its address is in {@code addresses})
   * @param addresses every rank's listening address, by rank
   * @param timeout the collective timeout, quoted in errors
   */
  public PeerLinks(int rank, byte[] secret, ServerSocketChannel listener,
      InetSocketAddress[] addresses, int slotBytes, int slotsPerLane, java.time.Duration timeout)
      throws IOException {
    this.rank = rank;
    this.timeout = timeout;
    this.secret = secret.clone();
    this.listener = listener;
    this.addresses = addresses.clone();
    this.slotBytes = slotBytes;
    this.slotsPerLane = slotsPerLane;
    this.links = new Link[addresses.length];
    this.selector = Selector.open();
    this.acceptor = new Thread(this::acceptLoop, "treeline-tcp-acceptor-" + rank);
    this.receiver = new Thread(this::receiveLoop, "treeline-tcp-receiver-" + rank);
    acceptor.setDaemon(true);
    receiver.setDaemon(true);
    acceptor.start();
    receiver.start();
  }

  /** Connections refused because they did not prove the secret. */
  @Override
  public int refusedConnections() {
    return refused.get();
  }

  // ---- the rank thread's side ----------------------------------------------------------------

  /** The call the rank thread is entering; stamped on its frames and checked on receipt. */
  @Override
  public void beginCall(long sequence, CallDescriptor call) {
    beginCall(sequence, call.count(), call.meta());
  }

  /** {@link #beginCall(long, CallDescriptor)} for callers that keep the descriptor unpacked. */
  public void beginCall(long sequence, long count, long meta) {
    callSequence = sequence;
    callCount = count;
    callMeta = meta;
  }

  /** Send {@code bytes} of {@code src} from {@code offset} on {@code lane}; rank thread only. */
  @Override
  public void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
      String phase) {
    Link l = link(peer, deadline, phase);
    checkLane(peer, lane, phase);
    while (l.sent[lane] >= slotsPerLane + l.credits.getAcquire(lane)) {
      waitOrFail(l, deadline, phase, "a credit to send on lane " + lane);
    }
    idle.reset();
    l.header.clear();
    l.header.putInt(DATA).putInt(lane).putInt((int) bytes).putInt(0).putLong(callSequence)
        .putLong(callCount).putLong(callMeta).flip();
    write(l, l.header, deadline, phase);
    int savedLimit = src.limit();
    int savedPos = src.position();
    try {
      src.limit((int) (offset + bytes)).position((int) offset);
      write(l, src, deadline, phase);
    } finally {
      src.limit(savedLimit).position(savedPos);
    }
    l.sent[lane]++;
  }

  /** The next message from {@code peer} on {@code lane}, valid until {@link #release}. */
  @Override
  public ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase) {
    Link l = link(peer, deadline, phase);
    checkLane(peer, lane, phase);
    Lane in = l.lane(lane, slotsPerLane, slotBytes);
    long head = in.counters.getPlain(Lane.HEAD);
    while (true) {
      // The receiver thread publishes a message (TAIL) before it records a failure it read
      // after it on the same socket (a peer that sent its last message and then closed), so
      // the failure is read first: a message published before it is seen by the check after.
      String failed = l.failure;
      if (in.counters.getAcquire(Lane.TAIL) > head) {
        break;
      }
      if (failed != null) {
        throw broken(l, phase, "a message on lane " + lane, failed);
      }
      idleOrTimeout(l, deadline, phase, "a message on lane " + lane);
    }
    idle.reset();
    int i = (int) (head % slotsPerLane);
    if (in.sequence[i] != callSequence || in.count[i] != callCount || in.meta[i] != callMeta) {
      throw new io.treeline.core.CallMismatchException(rank, peer, phase, callSequence,
          new io.treeline.exec.CallDescriptor(callCount, callMeta).describe(), in.sequence[i],
          new io.treeline.exec.CallDescriptor(in.count[i], in.meta[i]).describe());
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

  /** Give the slot of the last receive back and return a credit to the sender. */
  @Override
  public void release(int peer, int lane, long deadline, String phase) {
    Link l = links[peer];
    Lane in = l.lanes[lane];
    in.counters.setRelease(Lane.HEAD, in.counters.getPlain(Lane.HEAD) + 1);
    l.header.clear();
    l.header.putInt(CREDIT).putInt(lane).putInt(1).putInt(0).putLong(0).putLong(0).putLong(0)
        .flip();
    try {
      write(l, l.header, deadline, phase);
    } catch (CollectiveException e) {
      // The data has arrived; only the peer's future sends need this credit. A peer that has
      // already finished (its last message was this one) may have closed the link: remember,
      // and fail the next use of the link instead of this collective.
      l.failure = "returning a credit failed: " + e.getMessage();
    }
  }

  private void write(Link l, ByteBuffer b, long deadline, String phase) {
    try {
      while (b.hasRemaining()) {
        if (l.channel.write(b) == 0) {
          waitOrFail(l, deadline, phase, "room in the socket to rank " + l.peer);
        } else {
          idle.reset();
        }
      }
    } catch (IOException e) {
      throw new CollectiveException(rank, l.peer, phase, "the connection broke while sending: "
          + e.getMessage() + " (the peer process may have died)", e);
    }
  }

  private void checkLane(int peer, int lane, String phase) {
    if (lane < 0 || lane >= MAX_LANES) {
      throw new CollectiveException(rank, peer, phase, "lane " + lane + " beyond the "
          + MAX_LANES + " a link supports", null);
    }
  }

  private void waitOrFail(Link l, long deadline, String phase, String what) {
    String failed = l.failure;
    if (failed != null) {
      throw broken(l, phase, what, failed);
    }
    idleOrTimeout(l, deadline, phase, what);
  }

  private CollectiveException broken(Link l, String phase, String what, String failure) {
    return new CollectiveException(rank, l.peer, phase, "the connection to rank " + l.peer
        + " failed while waiting for " + what + ": " + failure, null);
  }

  private void idleOrTimeout(Link l, long deadline, String phase, String what) {
    if (closed) {
      throw new CollectiveException(rank, l.peer, phase, "the communicator was closed", null);
    }
    if (System.nanoTime() - deadline > 0) {
      throw CollectiveException.timeout(rank, l.peer, phase, what + " from rank " + l.peer,
          timeout);
    }
    idle.idle();
  }

  /** The link to {@code peer}, made on first use: the lower rank connects. */
  private Link link(int peer, long deadline, String phase) {
    Link l = links[peer];
    if (l != null) {
      return l;
    }
    if (peer == rank || peer < 0 || peer >= links.length) {
      throw new CollectiveException(rank, peer, phase, "no such peer", null);
    }
    SocketChannel ch;
    try {
      if (rank < peer) {
        ch = SocketChannel.open();
        ch.socket().connect(addresses[peer], (int) Math.max(1,
            Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000)));
        configure(ch);
        ch.socket().setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE,
            (deadline - System.nanoTime()) / 1_000_000))); // the handshake too has a deadline
        DataInputStream in = new DataInputStream(ch.socket().getInputStream());
        DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
        Handshake.connect(in, out, secret, PURPOSE, rank);
        ch.socket().setSoTimeout(0);
      } else {
        BackoffIdleStrategy wait = BackoffIdleStrategy.defaults();
        while ((ch = accepted.remove(peer)) == null) {
          if (closed) {
            throw new CollectiveException(rank, peer, phase, "the communicator was closed",
                null);
          }
          if (System.nanoTime() - deadline > 0) {
            throw CollectiveException.timeout(rank, peer, phase, "rank " + peer
                + " to connect to " + addresses[rank], timeout);
          }
          wait.idle();
        }
      }
      ch.configureBlocking(false);
    } catch (IOException e) {
      throw new CollectiveException(rank, peer, phase, "cannot connect to rank " + peer + " at "
          + addresses[peer] + ": " + e.getMessage(), e);
    }
    l = new Link(peer, ch);
    links[peer] = l;
    toRegister.add(l);
    selector.wakeup();
    return l;
  }

  private static void configure(SocketChannel ch) throws IOException {
    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
    ch.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
    ch.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
  }

  // ---- background threads --------------------------------------------------------------------

  private void acceptLoop() {
    while (!closed) {
      SocketChannel ch;
      try {
        ch = listener.accept();
      } catch (IOException e) {
        return; // closed
      }
      try {
        configure(ch);
        ch.socket().setSoTimeout(30_000);
        // unbuffered: a buffer could swallow the first frame that follows the handshake
        DataInputStream in = new DataInputStream(ch.socket().getInputStream());
        DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
        int peer = Handshake.accept(in, out, secret, PURPOSE);
        if (peer < 0 || peer >= rank) {
          throw new IOException("rank " + peer + " may not connect to rank " + rank);
        }
        ch.socket().setSoTimeout(0);
        accepted.put(peer, ch);
      } catch (IOException e) {
        refused.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "rank " + rank + " refused a connection from "
            + remote(ch) + ": " + e.getMessage());
        closeQuietly(ch);
      }
    }
  }

  private static String remote(SocketChannel ch) {
    try {
      return String.valueOf(ch.getRemoteAddress());
    } catch (IOException e) {
      return "?";
    }
  }

  private void receiveLoop() {
    try {
      while (!closed) {
        Link reg;
        while ((reg = toRegister.poll()) != null) {
          reg.channel.register(selector, SelectionKey.OP_READ, reg);
        }
        selector.select(100);
        for (SelectionKey k : selector.selectedKeys()) {
          Link l = (Link) k.attachment();
          try {
            if (!l.readAvailable(slotsPerLane, slotBytes)) {
              k.cancel();
            }
          } catch (IOException | RuntimeException e) {
            l.failure = e.toString();
            k.cancel();
          }
        }
        selector.selectedKeys().clear();
      }
    } catch (IOException | ClosedSelectorException e) {
      if (!closed) {
        LOG.log(System.Logger.Level.ERROR, "rank " + rank + ": the TCP receiver failed", e);
        for (Link l : links) {
          if (l != null) {
            l.failure = "receiver thread failed: " + e;
          }
        }
      }
    }
  }

  /**
   * Tell every linked peer that this rank's collective failed, and why; best effort, never
   * blocks beyond a short bounded write.
   */
  @Override
  public void abort(String reason) {
    byte[] r = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    int n = Math.min(r.length, MAX_REASON);
    for (Link l : links) {
      if (l == null || l.failure != null) {
        continue;
      }
      try {
        ByteBuffer f = ByteBuffer.allocate(HEADER + n);
        f.putInt(ABORT).putInt(0).putInt(n).putInt(0).putLong(0).putLong(0).putLong(0)
            .put(r, 0, n).flip();
        long deadline = System.nanoTime() + 100_000_000L;
        while (f.hasRemaining() && System.nanoTime() < deadline) {
          if (l.channel.write(f) == 0) {
            Thread.onSpinWait();
          }
        }
      } catch (IOException e) {
        // the peer is gone already
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    selector.wakeup();
    try {
      acceptor.join(5000);
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
    final long[] sent = new long[MAX_LANES];
    final AtomicLongArray credits = new AtomicLongArray(MAX_LANES);
    final Lane[] lanes = new Lane[MAX_LANES];
    // receiver thread state: the frame being read
    final ByteBuffer inHeader = ByteBuffer.allocateDirect(HEADER);
    ByteBuffer inPayload;
    int inLane;
    long inLength;
    long inSequence;
    long inCount;
    long inMeta;
    volatile String failure;

    Link(int peer, SocketChannel channel) {
      this.peer = peer;
      this.channel = channel;
    }

    synchronized Lane lane(int lane, int n, int bytes) {
      Lane l = lanes[lane];
      if (l == null) {
        l = new Lane(n, bytes);
        lanes[lane] = l;
      }
      return l;
    }

    /** Reads what the socket has; false at end of stream. Receiver thread only. */
    boolean readAvailable(int n, int bytes) throws IOException {
      while (true) {
        if (inPayload == null) {
          if (channel.read(inHeader) < 0) {
            failure = "rank " + peer + " closed the connection";
            return false;
          }
          if (inHeader.hasRemaining()) {
            return true;
          }
          inHeader.flip();
          int type = inHeader.getInt();
          int lane = inHeader.getInt();
          int len = inHeader.getInt();
          inHeader.getInt();
          long seq = inHeader.getLong();
          long cnt = inHeader.getLong();
          long mt = inHeader.getLong();
          inHeader.clear();
          if (type == ABORT) {
            if (len < 0 || len > MAX_REASON) {
              throw new IOException("refused an abort frame of " + len + " bytes");
            }
            ByteBuffer reason = ByteBuffer.allocate(len);
            long until = System.nanoTime() + 200_000_000L; // it follows the header at once
            while (reason.hasRemaining() && System.nanoTime() < until
                && channel.read(reason) >= 0) {
              Thread.onSpinWait();
            }
            failure = "rank " + peer + " aborted: " + new String(reason.array(), 0,
                reason.position(), java.nio.charset.StandardCharsets.UTF_8);
            return false;
          }
          if (lane < 0 || lane >= MAX_LANES) {
            throw new IOException("frame for lane " + lane + " from rank " + peer);
          }
          if (type == CREDIT) {
            credits.setRelease(lane, credits.getPlain(lane) + len);
            continue;
          }
          if (type != DATA || len < 0 || len > bytes) {
            throw new IOException("refused a frame of type " + type + " and " + len
                + " bytes from rank " + peer + " (slots hold " + bytes + ")");
          }
          Lane l = lane(lane, n, bytes);
          long tail = l.counters.getPlain(Lane.TAIL);
          if (tail - l.counters.getAcquire(Lane.HEAD) >= n) {
            throw new IOException("rank " + peer + " sent on lane " + lane
                + " without a credit");
          }
          int i = (int) (tail % n);
          inPayload = l.slots[i];
          inPayload.clear().limit(len);
          inLane = lane;
          inLength = len;
          inSequence = seq;
          inCount = cnt;
          inMeta = mt;
        }
        if (inPayload.hasRemaining() && channel.read(inPayload) < 0) {
          failure = "rank " + peer + " closed the connection";
          return false;
        }
        if (inPayload.hasRemaining()) {
          return true;
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
  }

  /** For tests: the rank's listening addresses. */
  List<InetSocketAddress> addresses() {
    return List.of(addresses);
  }
}

package io.treeline.bootstrap;

import io.treeline.conf.TreelineEnv;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * The rendezvous of plain processes, torchrun style: rank 0 hosts a small TCP store at
 * {@code TREELINE_MASTER_ADDR:TREELINE_MASTER_PORT}, every rank (rank 0 too) connects to it,
 * proves the job secret ({@link Handshake}) and then runs all-gathers through it. The store
 * answers a round when all {@code size} ranks have sent their part.
 */
public final class TcpStoreBootstrap implements Bootstrap {
  public static final String RANK = TreelineEnv.RANK.key();
  public static final String WORLD_SIZE = TreelineEnv.WORLD_SIZE.key();
  public static final String MASTER_ADDR = TreelineEnv.MASTER_ADDR.key();
  public static final String MASTER_PORT = TreelineEnv.MASTER_PORT.key();
  public static final String SECRET = TreelineEnv.SECRET.key();

  private static final System.Logger LOG = System.getLogger("io.treeline.bootstrap");
  private static final String PURPOSE = "treeline-store";
  private static final int ALL_GATHER = 1;
  private static final int ERROR = 2;
  private static final long ANSWER_GRACE_MS = 2000;

  private final int rank;
  private final int size;
  private final byte[] secret;
  private final Server server;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;
  private final String where;
  private int round;

  private TcpStoreBootstrap(int rank, int size, String host, int port, byte[] secret,
      Duration timeout) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw new BootstrapException("rank " + rank + " is not a rank of a world of " + size);
    }
    this.rank = rank;
    this.size = size;
    this.secret = secret.clone();
    this.where = host + ":" + port;
    this.server = rank == 0 ? new Server(host, port, size, secret) : null;
    Socket s = null;
    try {
      s = connect(host, port, timeout);
      s.setTcpNoDelay(true);
      in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
      out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
      s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
      Handshake.connect(in, out, secret, PURPOSE, rank);
      socket = s;
    } catch (IOException e) {
      closeQuietly(s);
      if (server != null) {
        server.close();
      }
      throw new BootstrapException("rank " + rank + ": cannot join the store at " + where
          + " within " + timeout.toMillis() + " ms: " + BootstrapException.describe(e), e);
    }
  }

  /** Joins (and for rank 0 hosts) the store at {@code host:port}. */
  public static TcpStoreBootstrap create(int rank, int size, String host, int port,
      byte[] secret, Duration timeout) {
    return new TcpStoreBootstrap(rank, size, host, port, secret, timeout);
  }

  /** From {@code TREELINE_RANK}, {@code _WORLD_SIZE}, {@code _MASTER_ADDR}, {@code _MASTER_PORT}, {@code _SECRET}. */
  public static TcpStoreBootstrap fromEnv(Duration timeout) {
    return fromEnv(System.getenv(), timeout);
  }

  public static TcpStoreBootstrap fromEnv(Map<String, String> env, Duration timeout) {
    LauncherWatch.start(); // a rank of ./treeline run never outlives its launcher
    String secret = env.get(SECRET);
    if (secret == null || secret.isEmpty()) {
      throw new BootstrapException(SECRET + " is not set: every rank of a job needs the same "
          + "secret to prove to its peers (./treeline run sets one)");
    }
    return create(intEnv(env, RANK), intEnv(env, WORLD_SIZE),
        env.getOrDefault(MASTER_ADDR, "127.0.0.1"), intEnv(env, MASTER_PORT),
        secret.getBytes(StandardCharsets.UTF_8), timeout);
  }

  private static int intEnv(Map<String, String> env, String name) {
    String v = env.get(name);
    if (v == null) {
      throw new BootstrapException(name + " is not set (a plain-process rank needs "
          + RANK + ", " + WORLD_SIZE + ", " + MASTER_ADDR + ", " + MASTER_PORT + ")");
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new BootstrapException(name + "='" + v + "' is not a number");
    }
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public byte[] secret() {
    return secret.clone();
  }

  @Override
  public synchronized byte[][] allGather(byte[] mine, Duration timeout) {
    int r = ++round;
    try {
      // the store answers at the timeout, naming who is missing; the socket waits a little more
      socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())
          + ANSWER_GRACE_MS));
      byte[] request = ByteBuffer.allocate(8 + mine.length).putLong(timeout.toMillis())
          .put(mine).array();
      Frames.write(out, ALL_GATHER, request);
      Frames.Frame f = Frames.read(in, Frames.MAX_FRAME);
      if (f.type() == ERROR) {
        throw new BootstrapException("rank " + rank + ", all-gather #" + r + " through the "
            + "store at " + where + " (timeout " + timeout.toMillis() + " ms): "
            + new String(f.payload(), StandardCharsets.UTF_8));
      }
      return decode(f.payload(), size);
    } catch (SocketTimeoutException e) {
      throw new BootstrapException("rank " + rank + ", all-gather #" + r + " through the store"
          + " at " + where + ": timed out after " + timeout.toMillis() + " ms waiting for the "
          + "other ranks, and the store did not say who is missing (is rank 0, which hosts it,"
          + " stopped?)", e);
    } catch (IOException e) {
      throw new BootstrapException("rank " + rank + ", all-gather #" + r + " through the store"
          + " at " + where + " (timeout " + timeout.toMillis() + " ms): "
          + (e instanceof java.io.EOFException ? "the store closed the connection: rank 0, "
          + "which hosts it, exited or failed" : BootstrapException.describe(e)), e);
    }
  }

  @Override
  public void close() {
    closeQuietly(socket);
    if (server != null) {
      server.close();
    }
  }

  /** Connections to the store refused for a wrong secret or a bad frame (rank 0 only). */
  public int refusedConnections() {
    return server == null ? 0 : server.refused();
  }

  private static Socket connect(String host, int port, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    IOException last = null;
    long sleep = 10;
    while (System.nanoTime() < deadline) {
      Socket s = new Socket();
      try {
        s.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(5000,
            (deadline - System.nanoTime()) / 1_000_000)));
        return s;
      } catch (IOException e) {
        closeQuietly(s);
        last = e;
        try {
          Thread.sleep(sleep);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", ie);
        }
        sleep = Math.min(200, sleep * 2); // rank 0 may not be listening yet
      }
    }
    throw last != null ? last : new IOException("timed out");
  }

  static byte[] encode(byte[][] parts) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(b);
    try {
      d.writeInt(parts.length);
      for (byte[] p : parts) {
        d.writeInt(p.length);
        d.write(p);
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return b.toByteArray();
  }

  static byte[][] decode(byte[] payload, int size) throws IOException {
    if (payload.length < 4) {
      throw new IOException("malformed all-gather answer of " + payload.length + " bytes");
    }
    ByteBuffer b = ByteBuffer.wrap(payload);
    int n = b.getInt();
    if (n != size) {
      throw new IOException("the store answered " + n + " parts for a world of " + size);
    }
    byte[][] out = new byte[n][];
    for (int i = 0; i < n; i++) {
      int len = b.remaining() >= 4 ? b.getInt() : -1;
      if (len < 0 || len > b.remaining()) {
        throw new IOException("malformed all-gather answer");
      }
      out[i] = new byte[len];
      b.get(out[i]);
    }
    return out;
  }

  private static void closeQuietly(java.io.Closeable s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }

  /**
   * Rank 0's store. Connections prove the secret in a {@link SecureAcceptor} (non-blocking, with
   * a deadline, a bounded number pending); each admitted rank gets one thread, so the store runs
   * at most {@code size} + 2 threads and holds at most {@code size} sockets, and a rank's socket
   * is closed as soon as it leaves. The store knows who is missing: a rank that leaves (its
   * process died) fails the round at once for everyone, and a round that reaches its timeout is
   * answered with the ranks that never came, so a set-up death names the rank.
   */
  private static final class Server implements AutoCloseable {
    private final int size;
    private final SecureAcceptor acceptor;
    private final java.util.concurrent.atomic.AtomicInteger protocolErrors =
        new java.util.concurrent.atomic.AtomicInteger();
    private final SocketChannel[] members;
    private final DataOutputStream[] outs;
    private final boolean[] left;
    private final byte[][] parts;
    private final java.util.concurrent.ScheduledExecutorService timer;
    private java.util.concurrent.ScheduledFuture<?> roundTimeout;
    private int arrived;
    private int rounds;
    private String failure;
    private volatile boolean closed;

    Server(String host, int port, int size, byte[] secret) {
      this.size = size;
      this.members = new SocketChannel[size];
      this.outs = new DataOutputStream[size];
      this.left = new boolean[size];
      this.parts = new byte[size][];
      // the timer exists before the acceptor starts: a rank admitted at once may contribute
      // (and schedule its round's timeout) before this constructor returns
      timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "treeline-store-timer");
        t.setDaemon(true);
        return t;
      });
      ServerSocketChannel listener = null;
      try {
        listener = ServerSocketChannel.open();
        listener.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
        listener.bind(new InetSocketAddress(InetAddress.getByName(host), port), 1024);
        acceptor = new SecureAcceptor("store", listener, secret, PURPOSE, Handshake.DEADLINE,
            64, this::admit);
      } catch (IOException e) {
        closeQuietly(listener);
        timer.shutdownNow();
        throw new BootstrapException("rank 0: cannot host the store on " + host + ":" + port
            + ": " + BootstrapException.describe(e) + " (is the port taken? set " + MASTER_PORT
            + ")", e);
      }
    }

    int refused() {
      return acceptor.refused() + protocolErrors.get();
    }

    private synchronized void admit(int peer, SocketChannel ch) throws IOException {
      if (peer < 0 || peer >= size) {
        throw new IOException("rank " + peer + " is not a rank of a world of " + size);
      }
      if (members[peer] != null || left[peer]) {
        throw new IOException("rank " + peer + " has joined the store already");
      }
      ch.configureBlocking(true);
      members[peer] = ch;
      outs[peer] = new DataOutputStream(new BufferedOutputStream(ch.socket().getOutputStream()));
      DataInputStream in = new DataInputStream(new BufferedInputStream(
          ch.socket().getInputStream()));
      Thread t = new Thread(() -> serve(peer, in), "treeline-store-rank-" + peer);
      t.setDaemon(true);
      t.start();
    }

    private void serve(int peer, DataInputStream in) {
      try {
        while (!closed) {
          Frames.Frame f = Frames.read(in, Frames.MAX_FRAME);
          if (f.type() != ALL_GATHER || f.payload().length < 8) {
            throw new java.net.ProtocolException("unknown store request " + f.type());
          }
          ByteBuffer b = ByteBuffer.wrap(f.payload());
          long timeoutMs = b.getLong();
          contribute(peer, java.util.Arrays.copyOfRange(f.payload(), 8, f.payload().length),
              timeoutMs);
        }
      } catch (IOException e) {
        if (e instanceof java.net.ProtocolException) {
          protocolErrors.incrementAndGet();
          LOG.log(System.Logger.Level.WARNING, "treeline store: rank " + peer + " sent a bad "
              + "frame: " + e.getMessage());
        }
        leave(peer, e);
      } catch (RuntimeException e) {
        // a store bug must fail the round for everyone at once, not leave them to time out
        LOG.log(System.Logger.Level.ERROR, "treeline store: serving rank " + peer + " failed", e);
        leave(peer, new IOException("the store's thread for rank " + peer + " failed: " + e, e));
      }
    }

    private synchronized void contribute(int peer, byte[] payload, long timeoutMs) {
      if (failure != null) {
        answer(peer, ERROR, failure.getBytes(StandardCharsets.UTF_8));
        return;
      }
      if (parts[peer] != null) {
        fail("rank " + peer + " sent twice in all-gather #" + (rounds + 1));
        return;
      }
      parts[peer] = payload;
      if (arrived++ == 0) {
        int round = rounds + 1;
        roundTimeout = timer.schedule(() -> timedOut(round, timeoutMs), Math.max(1, timeoutMs),
            java.util.concurrent.TimeUnit.MILLISECONDS);
      }
      if (arrived < size) {
        return;
      }
      roundTimeout.cancel(false);
      byte[] answer = encode(parts);
      for (int r = 0; r < size; r++) {
        answer(r, ALL_GATHER, answer);
        parts[r] = null;
      }
      arrived = 0;
      rounds++;
    }

    private synchronized void timedOut(int round, long timeoutMs) {
      if (round == rounds + 1 && arrived > 0 && failure == null) {
        fail("all-gather #" + round + " timed out after " + timeoutMs + " ms at the store: "
            + missing());
      }
    }

    /** A rank's connection ended: its process died, or it closed its bootstrap. */
    private synchronized void leave(int peer, IOException e) {
      left[peer] = true;
      closeQuietly(members[peer]);
      members[peer] = null;
      outs[peer] = null;
      if (closed || failure != null) {
        return;
      }
      String how = e instanceof java.io.EOFException ? "its process exited or closed its "
          + "bootstrap" : BootstrapException.describe(e);
      if (arrived == 0) {
        // between rounds: the end of a job, unless someone asks for another round
        failure = "rank " + peer + " left the store (" + how + ") after all-gather #" + rounds;
      } else {
        fail("rank " + peer + " left the store (" + how + ") during all-gather #"
            + (rounds + 1) + "; " + missing());
      }
    }

    /** Every later round fails too: a rank is gone for good. */
    private void fail(String why) {
      failure = why;
      LOG.log(System.Logger.Level.WARNING, "treeline store: " + why);
      byte[] text = why.getBytes(StandardCharsets.UTF_8);
      for (int r = 0; r < size; r++) {
        if (parts[r] != null) {
          answer(r, ERROR, text);
          parts[r] = null;
        }
      }
      arrived = 0;
    }

    private String missing() {
      StringBuilder never = new StringBuilder();
      StringBuilder absent = new StringBuilder();
      StringBuilder gone = new StringBuilder();
      for (int r = 0; r < size; r++) {
        if (parts[r] != null) {
          continue;
        }
        StringBuilder b = left[r] ? gone : members[r] == null ? never : absent;
        b.append(b.length() > 0 ? ", " : "").append(r);
      }
      StringBuilder out = new StringBuilder("missing from this round:");
      if (gone.length() > 0) {
        out.append(" rank ").append(gone).append(" (gone: exited or killed)");
      }
      if (never.length() > 0) {
        out.append(gone.length() > 0 ? ";" : "").append(" rank ").append(never)
            .append(" (never connected: not started, or died before it joined)");
      }
      if (absent.length() > 0) {
        out.append(gone.length() + never.length() > 0 ? ";" : "").append(" rank ")
            .append(absent).append(" (connected, not yet here: slow, stopped or making another "
            + "call)");
      }
      return out.toString();
    }

    private void answer(int r, int type, byte[] payload) {
      DataOutputStream o = outs[r];
      if (o == null) {
        return;
      }
      try {
        Frames.write(o, type, payload);
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "treeline store: cannot answer rank " + r + ": "
            + BootstrapException.describe(e));
      }
    }

    /**
     * Stops the store. When a round has failed, every rank still connected is told why first
     * (rank 0 may close its store because of another rank's failure: the others should hear
     * that cause, not just that the store went away), and has a moment to read it.
     */
    @Override
    public void close() {
      boolean told = false;
      synchronized (this) {
        closed = true;
        if (failure != null) {
          byte[] text = failure.getBytes(StandardCharsets.UTF_8);
          for (int r = 0; r < size; r++) {
            if (members[r] != null && parts[r] == null) {
              answer(r, ERROR, text);
              try {
                members[r].shutdownOutput();
                told = true;
              } catch (IOException e) {
                // gone already
              }
            }
          }
        }
      }
      acceptor.close();
      timer.shutdownNow();
      if (told) {
        try {
          Thread.sleep(100); // their requests in flight are read, so no reset discards it
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      synchronized (this) {
        for (SocketChannel s : members) {
          closeQuietly(s);
        }
      }
    }
  }
}

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
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

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
          + " within " + timeout.toMillis() + " ms: " + e.getMessage(), e);
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
      socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
      Frames.write(out, ALL_GATHER, mine);
      Frames.Frame f = Frames.read(in, Frames.MAX_FRAME);
      return decode(f.payload(), size);
    } catch (SocketTimeoutException e) {
      throw new BootstrapException("rank " + rank + ", all-gather #" + r + " through the store"
          + " at " + where + ": timed out after " + timeout.toMillis() + " ms waiting for the "
          + "other ranks (one may have failed, or not been started)", e);
    } catch (IOException e) {
      throw new BootstrapException("rank " + rank + ", all-gather #" + r + " through the store"
          + " at " + where + ": " + e.getMessage(), e);
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
    return server == null ? 0 : server.refused.get();
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
    ByteBuffer b = ByteBuffer.wrap(payload);
    int n = b.getInt();
    if (n != size) {
      throw new IOException("the store answered " + n + " parts for a world of " + size);
    }
    byte[][] out = new byte[n][];
    for (int i = 0; i < n; i++) {
      int len = b.getInt();
      if (len < 0 || len > b.remaining()) {
        throw new IOException("malformed all-gather answer");
      }
      out[i] = new byte[len];
      b.get(out[i]);
    }
    return out;
  }

  private static void closeQuietly(Socket s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }

  /** Rank 0's store: one thread per connected rank, rounds of all-gather. */
  private static final class Server implements AutoCloseable {
    private final ServerSocket listener;
    private final int size;
    private final byte[] secret;
    private final List<Socket> clients = new ArrayList<>();
    private final DataOutputStream[] outs;
    private final byte[][] parts;
    private final AtomicInteger refused = new AtomicInteger();
    private final Thread acceptor;
    private int arrived;
    private volatile boolean closed;

    Server(String host, int port, int size, byte[] secret) {
      this.size = size;
      this.secret = secret.clone();
      this.outs = new DataOutputStream[size];
      this.parts = new byte[size][];
      try {
        listener = new ServerSocket();
        listener.setReuseAddress(true);
        listener.bind(new InetSocketAddress(InetAddress.getByName(host), port), 1024);
      } catch (IOException e) {
        throw new BootstrapException("rank 0: cannot host the store on " + host + ":" + port
            + ": " + e.getMessage() + " (is the port taken? set " + MASTER_PORT + ")", e);
      }
      acceptor = new Thread(this::acceptLoop, "treeline-store-acceptor");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    private void acceptLoop() {
      while (!closed) {
        Socket s;
        try {
          s = listener.accept();
        } catch (IOException e) {
          return; // closed
        }
        synchronized (this) {
          clients.add(s);
        }
        Thread t = new Thread(() -> serve(s), "treeline-store-client");
        t.setDaemon(true);
        t.start();
      }
    }

    private void serve(Socket s) {
      int peer = -1;
      try {
        s.setTcpNoDelay(true);
        s.setSoTimeout(60_000); // the handshake is quick; after it, rounds may wait long
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(
            s.getOutputStream()));
        peer = Handshake.accept(in, out, secret, PURPOSE);
        if (peer < 0 || peer >= size) {
          throw new IOException("rank " + peer + " is not a rank of a world of " + size);
        }
        s.setSoTimeout(0);
        synchronized (this) {
          outs[peer] = out;
        }
        while (!closed) {
          Frames.Frame f = Frames.read(in, Frames.MAX_FRAME);
          if (f.type() != ALL_GATHER) {
            throw new IOException("unknown store request " + f.type());
          }
          contribute(peer, f.payload());
        }
      } catch (IOException e) {
        if (!closed) {
          if (peer < 0 || e.getMessage() != null && e.getMessage().startsWith("refused")) {
            refused.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "treeline store refused a connection from "
                + s.getRemoteSocketAddress() + ": " + e.getMessage());
          }
        }
        closeQuietly(s);
      }
    }

    private synchronized void contribute(int peer, byte[] payload) throws IOException {
      if (parts[peer] != null) {
        throw new IOException("rank " + peer + " sent twice in one all-gather round");
      }
      parts[peer] = payload;
      if (++arrived < size) {
        return;
      }
      byte[] answer = encode(parts);
      for (int r = 0; r < size; r++) {
        try {
          Frames.write(outs[r], ALL_GATHER, answer);
        } catch (IOException e) {
          LOG.log(System.Logger.Level.WARNING, "treeline store: cannot answer rank " + r + ": "
              + e.getMessage());
        }
        parts[r] = null;
      }
      arrived = 0;
    }

    @Override
    public void close() {
      closed = true;
      try {
        listener.close();
      } catch (IOException e) {
        // closing anyway
      }
      synchronized (this) {
        for (Socket s : clients) {
          closeQuietly(s);
        }
      }
    }
  }
}

package io.treeline.fault;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.Handshake;
import io.treeline.bootstrap.InProcessBootstrap;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CollectiveCheck;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.NetworkLink;
import io.treeline.testing.Elements;
import io.treeline.testing.Ranks;
import io.treeline.transport.TransportProvider;
import io.treeline.transport.shm.ShmTransport;
import io.treeline.transport.tcp.TcpTransport;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Strangers on a rank's ports (issue 16's pre-authentication denial of service): idle, slow,
 * garbage, wrong-secret, wrong-rank and a burst of connections, opened the moment a rank
 * listens, before any collective, and held open. The job must set up and its allreduce be
 * right, well inside its timeout, as if they were not there.
 */
class HostilePortsTest {
  private static final byte[] WRONG = "not-the-job-secret".getBytes(StandardCharsets.UTF_8);
  private static final Duration TIMEOUT = Duration.ofSeconds(20);

  /** Everything a stranger holds open; closed at the end. */
  static final class Strangers implements AutoCloseable {
    final List<Socket> sockets = new CopyOnWriteArrayList<>();
    final List<Thread> threads = new CopyOnWriteArrayList<>();
    final List<String> outcomes = new CopyOnWriteArrayList<>();
    volatile boolean done;

    /** Opens every kind of hostile connection to {@code at}; seeded, so a failure replays. */
    void attack(InetSocketAddress at, long seed) throws IOException {
      Random rnd = new Random(seed);
      for (int i = 0; i < 3; i++) {
        sockets.add(new Socket(at.getAddress(), at.getPort())); // idle: says nothing
      }
      for (int i = 0; i < 3; i++) { // garbage of random length, then silence
        Socket s = new Socket(at.getAddress(), at.getPort());
        byte[] junk = new byte[1 + rnd.nextInt(200)];
        rnd.nextBytes(junk);
        s.getOutputStream().write(junk);
        sockets.add(s);
      }
      for (int i = 0; i < 100; i++) {
        sockets.add(new Socket(at.getAddress(), at.getPort())); // a burst past MAX_PENDING
      }
      Socket slow = new Socket(at.getAddress(), at.getPort());
      sockets.add(slow);
      long slowSeed = rnd.nextLong();
      background(() -> { // one byte every 100 ms: never completes an answer in time
        Random r = new Random(slowSeed);
        while (!done) {
          slow.getOutputStream().write(r.nextInt(256));
          Thread.sleep(100);
        }
      });
      for (int claimed : new int[] {0, 1, 7, -1}) { // the handshake with the wrong secret
        background(() -> {
          try (Socket s = new Socket(at.getAddress(), at.getPort())) {
            Handshake.connect(new DataInputStream(s.getInputStream()),
                new DataOutputStream(s.getOutputStream()), WRONG, "treeline-peer", claimed);
            outcomes.add("ADMITTED with a wrong secret as rank " + claimed);
          } catch (IOException e) {
            outcomes.add("refused");
          }
        });
      }
    }

    interface Body {
      void run() throws Exception;
    }

    private void background(Body b) {
      Thread t = new Thread(() -> {
        try {
          b.run();
        } catch (Exception e) {
          // the rank dropped us: that is the point
        }
      }, "stranger");
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }

    @Override
    public void close() throws Exception {
      done = true;
      for (Socket s : sockets) {
        s.close();
      }
      for (Thread t : threads) {
        t.join(10_000);
      }
    }
  }

  /** A TCP transport whose port strangers attack as soon as it listens. */
  static final class Attacked implements TransportProvider<NetworkLink> {
    final TcpTransport tcp = new TcpTransport(64 << 10, 4, "127.0.0.1");
    final Strangers strangers;

    Attacked(Strangers strangers) {
      this.strangers = strangers;
    }

    @Override
    public Pending<NetworkLink> open(Local local) throws IOException {
      Pending<NetworkLink> p = tcp.open(local);
      DataInputStream d = new DataInputStream(new ByteArrayInputStream(p.address()));
      strangers.attack(new InetSocketAddress(d.readUTF(), d.readInt()), 16 + local.rank());
      return p;
    }
  }

  @Test
  void strangersOnEveryPeerPortBeforeTheFirstCollectiveDelayNoOne() throws Exception {
    CommConfig config = CommConfig.DEFAULT.withTimeout(TIMEOUT).withSegmentBytes(1 << 20);
    InProcessBootstrap[] boots = InProcessBootstrap.nodes(2, 2);
    int[] refused = new int[boots.length];
    try (Strangers strangers = new Strangers()) {
      Attacked network = new Attacked(strangers);
      Ranks.run(boots.length, TIMEOUT.toMillis() + 10_000, r -> {
        try (HostCommunicator c = HostCommunicator.create(boots[r], config, new ShmTransport(
            config.segmentBytes()), network)) {
          for (long n : new long[] {1, 1021, 40_009}) {
            allReduceRight(c, n);
          }
          refused[r] = c.refusedConnections();
        }
      });
      assertTrue(strangers.outcomes.stream().allMatch(o -> o.equals("refused")),
          strangers.outcomes.toString());
    }
    for (int r = 0; r < boots.length; r++) {
      // the wrong secrets at least; idle and burst ones are dropped later, at their deadline
      assertTrue(refused[r] >= 4, "rank " + r + " refused " + refused[r]);
    }
  }

  @Test
  void strangersOnTheStorePortDelayNoOne() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    byte[] secret = "job".getBytes(StandardCharsets.UTF_8);
    int n = 4;
    byte[][][] got = new byte[n][][];
    try (Strangers strangers = new Strangers();
        TcpStoreBootstrap rank0 = TcpStoreBootstrap.create(0, n, "127.0.0.1", port, secret,
            TIMEOUT)) {
      strangers.attack(new InetSocketAddress("127.0.0.1", port), 99);
      Ranks.run(n, TIMEOUT.toMillis(), r -> {
        if (r == 0) {
          got[0] = rank0.allGather(new byte[] {0}, TIMEOUT);
          return;
        }
        try (TcpStoreBootstrap b = TcpStoreBootstrap.create(r, n, "127.0.0.1", port, secret,
            TIMEOUT)) {
          got[r] = b.allGather(new byte[] {(byte) r}, TIMEOUT);
        }
      });
      for (int r = 0; r < n; r++) {
        for (int k = 0; k < n; k++) {
          assertArrayEquals(new byte[] {(byte) k}, got[r][k]);
        }
      }
      assertTrue(rank0.refusedConnections() >= 4, "refused " + rank0.refusedConnections());
    }
  }

  @Test
  void anInsiderClaimingAnotherRankAfterSetUpIsRefused() throws Exception {
    // with the secret but as a rank that is linked already: no second link, no data
    CommConfig config = CommConfig.DEFAULT.withTimeout(TIMEOUT).withSegmentBytes(1 << 20);
    InProcessBootstrap[] boots = InProcessBootstrap.nodes(1, 1);
    List<InetSocketAddress> ports = new CopyOnWriteArrayList<>();
    TransportProvider<NetworkLink> tcp = new TransportProvider<>() {
      final TcpTransport real = new TcpTransport(64 << 10, 4, "127.0.0.1");

      @Override
      public Pending<NetworkLink> open(Local local) throws IOException {
        Pending<NetworkLink> p = real.open(local);
        DataInputStream d = new DataInputStream(new ByteArrayInputStream(p.address()));
        InetSocketAddress a = new InetSocketAddress(d.readUTF(), d.readInt());
        if (local.rank() == 1) {
          ports.add(a);
        }
        return p;
      }
    };
    List<Throwable> errors = new ArrayList<>();
    Ranks.run(2, TIMEOUT.toMillis(), r -> {
      try (HostCommunicator c = HostCommunicator.create(boots[r], config, new ShmTransport(
          config.segmentBytes()), tcp)) {
        allReduceRight(c, 13);
        c.barrier();
        if (r == 0) {
          InetSocketAddress a = ports.get(0);
          try (Socket s = new Socket(a.getAddress(), a.getPort())) {
            s.setSoTimeout(10_000);
            // proves the secret: the acceptor says yes, the link table says no and closes
            Handshake.connect(new DataInputStream(s.getInputStream()),
                new DataOutputStream(s.getOutputStream()), boots[r].secret(), "treeline-peer",
                0);
            assertTrue(s.getInputStream().read() < 0, "a second link was kept open");
          } catch (IOException e) {
            errors.add(e);
          }
        }
        c.barrier();
        allReduceRight(c, 1021); // the link the job made is unharmed
      }
    });
    assertTrue(errors.isEmpty(), errors.toString());
  }

  private static void allReduceRight(HostCommunicator c, long n) {
    ByteBuffer in = Elements.direct(n, DataType.F32);
    for (int i = 0; i < n; i++) {
      Elements.put(in, i, CollectiveCheck.value(n, c.rank(), i, DataType.F32, ReduceOp.SUM),
          DataType.F32);
    }
    ByteBuffer out = Elements.direct(n, DataType.F32);
    c.allReduce(in, out, n, DataType.F32, ReduceOp.SUM);
    double[][] col = new double[c.size()][1];
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < c.size(); r++) {
        col[r][0] = CollectiveCheck.value(n, r, i, DataType.F32, ReduceOp.SUM);
      }
      CollectiveCheck.check(c.rank(), "allreduce n=" + n, col, out, i, DataType.F32,
          ReduceOp.SUM);
    }
  }
}

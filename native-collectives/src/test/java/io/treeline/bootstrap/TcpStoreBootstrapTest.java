package io.treeline.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.testing.Ranks;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TcpStoreBootstrapTest {
  private static final byte[] SECRET = "s3cret-of-the-job".getBytes(StandardCharsets.UTF_8);

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void ranksAllGatherThroughTheStoreInRankOrder() throws IOException {
    int port = freePort();
    byte[][][] got = new byte[5][][];
    Ranks.run(5, 30_000, r -> {
      try (TcpStoreBootstrap b = TcpStoreBootstrap.create(r, 5, "127.0.0.1", port, SECRET,
          Duration.ofSeconds(20))) {
        got[r] = b.allGather(new byte[] {(byte) (10 + r)}, Duration.ofSeconds(20));
        b.barrier(Duration.ofSeconds(20));
        b.allGather(new byte[r * 1000], Duration.ofSeconds(20)); // rounds of any size
      }
    });
    for (int r = 0; r < 5; r++) {
      for (int k = 0; k < 5; k++) {
        assertArrayEquals(new byte[] {(byte) (10 + k)}, got[r][k]);
      }
    }
  }

  @Test
  void aConnectionWithoutTheSecretIsRefusedAndCounted() throws Exception {
    int port = freePort();
    try (TcpStoreBootstrap store = TcpStoreBootstrap.create(0, 2, "127.0.0.1", port, SECRET,
        Duration.ofSeconds(10))) {
      IOException e = assertThrows(IOException.class, () -> {
        try (Socket s = new Socket("127.0.0.1", port)) {
          Handshake.connect(new DataInputStream(s.getInputStream()),
              new DataOutputStream(s.getOutputStream()),
              "wrong".getBytes(StandardCharsets.UTF_8), "treeline-store", 1);
        }
      });
      assertTrue(e.getMessage().contains("refused"), e.getMessage());
      waitFor(() -> store.refusedConnections() == 1);
    }
  }

  @Test
  void anOversizedFrameIsRefusedBeforeAllocation() throws Exception {
    int port = freePort();
    try (TcpStoreBootstrap store = TcpStoreBootstrap.create(0, 2, "127.0.0.1", port, SECRET,
        Duration.ofSeconds(10));
        Socket s = new Socket("127.0.0.1", port)) {
      DataInputStream in = new DataInputStream(s.getInputStream());
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      Handshake.connect(in, out, SECRET, "treeline-store", 1);
      out.writeInt(1);
      out.writeInt(Frames.MAX_FRAME + 1); // claims 16 MiB + 1 and sends nothing
      out.flush();
      waitFor(() -> store.refusedConnections() == 1);
      assertEquals(-1, in.read(), "the store closes the connection");
    }
  }

  @Test
  void missingEnvironmentSaysWhatToSet() {
    BootstrapException e = assertThrows(BootstrapException.class,
        () -> TcpStoreBootstrap.fromEnv(Map.of("TREELINE_SECRET", "x"), Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("TREELINE_RANK is not set"), e.getMessage());
    e = assertThrows(BootstrapException.class,
        () -> TcpStoreBootstrap.fromEnv(Map.of(), Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("TREELINE_SECRET is not set"), e.getMessage());
  }

  @Test
  void aRankWhosePeersNeverComeTimesOutNamingRankAndPhase() throws IOException {
    int port = freePort();
    try (TcpStoreBootstrap b = TcpStoreBootstrap.create(0, 3, "127.0.0.1", port, SECRET,
        Duration.ofSeconds(10))) {
      BootstrapException e = assertThrows(BootstrapException.class,
          () -> b.allGather(new byte[1], Duration.ofMillis(300)));
      assertTrue(e.getMessage().startsWith("rank 0, all-gather #1"), e.getMessage());
      assertTrue(e.getMessage().contains("timed out after 300 ms"), e.getMessage());
    }
  }

  @Test
  void aRankThatLeavesFailsTheRoundAtOnceForEveryoneNamingIt() throws Exception {
    int port = freePort();
    Duration t = Duration.ofSeconds(30);
    String[] seen = new String[3];
    long[] took = new long[3];
    try (TcpStoreBootstrap b0 = TcpStoreBootstrap.create(0, 3, "127.0.0.1", port, SECRET, t);
        TcpStoreBootstrap b1 = TcpStoreBootstrap.create(1, 3, "127.0.0.1", port, SECRET, t)) {
      TcpStoreBootstrap b2 = TcpStoreBootstrap.create(2, 3, "127.0.0.1", port, SECRET, t);
      Ranks.run(3, 20_000, r -> {
        if (r == 2) {
          sleep(300);
          b2.close(); // as its process dying closes its socket
          return;
        }
        long t0 = System.nanoTime();
        BootstrapException e = assertThrows(BootstrapException.class,
            () -> (r == 0 ? b0 : b1).allGather(new byte[] {1}, t));
        took[r] = (System.nanoTime() - t0) / 1_000_000;
        seen[r] = e.getMessage();
      });
    }
    for (int r = 0; r < 2; r++) {
      assertTrue(seen[r].contains("rank 2 left the store"), seen[r]);
      assertTrue(seen[r].startsWith("rank " + r + ", all-gather #1"), seen[r]);
      assertTrue(took[r] < 5000, "rank " + r + " waited " + took[r] + " ms");
    }
    System.out.println("store: rank 2 left; ranks 0 and 1 failed after " + took[0] + " and "
        + took[1] + " ms (timeout 30 s): " + seen[0]);
  }

  @Test
  void aRoundThatTimesOutNamesWhoNeverCameAndWhoIsLate() throws IOException {
    int port = freePort();
    try (TcpStoreBootstrap b0 = TcpStoreBootstrap.create(0, 4, "127.0.0.1", port, SECRET,
        Duration.ofSeconds(10));
        TcpStoreBootstrap b1 = TcpStoreBootstrap.create(1, 4, "127.0.0.1", port, SECRET,
            Duration.ofSeconds(10))) {
      BootstrapException e = assertThrows(BootstrapException.class,
          () -> b0.allGather(new byte[1], Duration.ofMillis(400)));
      String m = e.getMessage();
      assertTrue(m.contains("rank 2, 3 (never connected"), m);
      assertTrue(m.contains("rank 1 (connected, not yet here"), m);
      assertTrue(m.contains("timed out after 400 ms"), m);
    }
  }

  @Test
  void strangersNeverGrowTheStoresThreadsOrKeepItsSockets() throws Exception {
    int port = freePort();
    int before = storeThreads();
    java.util.List<Socket> strangers = new java.util.ArrayList<>();
    try (TcpStoreBootstrap b0 = TcpStoreBootstrap.create(0, 2, "127.0.0.1", port, SECRET,
        Duration.ofSeconds(10))) {
      for (int i = 0; i < 150; i++) {
        Socket s = new Socket("127.0.0.1", port);
        s.getOutputStream().write(new byte[i % 50]);
        strangers.add(s);
      }
      Thread.sleep(300);
      // the acceptor, the timer and one thread per admitted rank: never one per connection
      assertTrue(storeThreads() - before <= 2 + 2, "store threads: " + (storeThreads() - before));
      try (TcpStoreBootstrap b1 = TcpStoreBootstrap.create(1, 2, "127.0.0.1", port, SECRET,
          Duration.ofSeconds(10))) {
        Ranks.run(2, 20_000, r -> (r == 0 ? b0 : b1).allGather(new byte[] {(byte) r},
            Duration.ofSeconds(10)));
      }
    } finally {
      for (Socket s : strangers) {
        s.close();
      }
    }
  }

  @Test
  void aStoreThatHangsUpIsNamedNeverNull() throws Exception {
    try (java.net.ServerSocket fake = new java.net.ServerSocket(0, 10,
        InetAddress.getLoopbackAddress())) {
      Thread t = new Thread(() -> {
        try (Socket s = fake.accept()) {
          s.getOutputStream().write(new byte[5]); // half a nonce, then hang up
        } catch (IOException e) {
          // done
        }
      });
      t.start();
      BootstrapException e = assertThrows(BootstrapException.class,
          () -> TcpStoreBootstrap.create(1, 2, "127.0.0.1", fake.getLocalPort(), SECRET,
              Duration.ofSeconds(5)));
      t.join();
      assertTrue(!e.getMessage().contains("null") && e.getMessage().contains("closed"),
          e.getMessage());
    }
  }

  @Test
  void allGatherAnswersDecodeOrFailCleanly() {
    // seeded, bounded: a broken or hostile store's answer is an IOException, never another error
    java.util.Random rnd = new java.util.Random(0x5701E);
    int decoded = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] in = new byte[rnd.nextInt(48)];
      rnd.nextBytes(in);
      if (in.length >= 4 && rnd.nextBoolean()) {
        java.nio.ByteBuffer.wrap(in).putInt(0, rnd.nextInt(4));
      }
      try {
        TcpStoreBootstrap.decode(in, rnd.nextInt(4));
        decoded++;
      } catch (IOException e) {
        // refused cleanly
      } catch (RuntimeException e) {
        throw new AssertionError("input " + i + ": " + e, e);
      }
    }
    System.out.println("fuzz: 20000 store answers, " + decoded + " decoded, the rest refused");
  }

  private static int storeThreads() {
    return (int) Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive()
        && (t.getName().startsWith("treeline-store") || t.getName().contains("acceptor-store")))
        .count();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static void waitFor(java.util.function.BooleanSupplier cond) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 5000;
    while (!cond.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("condition not met within 5 s");
      }
      Thread.sleep(10);
    }
  }
}

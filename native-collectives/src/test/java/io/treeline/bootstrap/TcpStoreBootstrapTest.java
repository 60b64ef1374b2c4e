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

package io.treeline.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.Handshake;
import io.treeline.core.CollectiveException;
import io.treeline.testing.Ranks;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PeerLinksTest {
  private static final byte[] SECRET = "job".getBytes(StandardCharsets.UTF_8);
  private static final Duration T = Duration.ofSeconds(10);

  private static ServerSocketChannel listen() throws IOException {
    ServerSocketChannel s = ServerSocketChannel.open();
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    return s;
  }

  private static InetSocketAddress addr(ServerSocketChannel s) throws IOException {
    return (InetSocketAddress) s.getLocalAddress();
  }

  private static long deadline() {
    return System.nanoTime() + T.toNanos();
  }

  /** Links made as set-up makes them: every rank connects at once, on its own thread. */
  static void connectAll(PeerLinks... links) {
    Ranks.run(links.length, 30_000, r -> links[r].connect(deadline()));
  }

  /**
   * Waiting rank threads read their own sockets only where this host's ranks and their
   * receiver threads fit its cores; the property forces it either way.
   */
  @Test
  void rankThreadsReadTheirSocketsOnlyWhereTheCoresAllow() throws Exception {
    InetSocketAddress here = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1);
    InetSocketAddress there = new InetSocketAddress(InetAddress.getByName("192.0.2.1"), 1);
    InetSocketAddress[] twoHere = {here, here};
    InetSocketAddress[] oneHere = {here, there};
    String saved = System.getProperty("treeline.tcpPollRead");
    System.clearProperty("treeline.tcpPollRead");
    try {
      assertFalse(PeerLinks.pollReads(oneHere, 0, 64), "opt-in");
      System.setProperty("treeline.tcpPollRead", "auto");
      assertTrue(PeerLinks.pollReads(twoHere, 0, 4), "2 ranks x 2 threads on 4 cores");
      assertFalse(PeerLinks.pollReads(twoHere, 0, 3), "4 threads on 3 cores");
      assertTrue(PeerLinks.pollReads(oneHere, 0, 2), "the peer's rank is on another host");
      System.setProperty("treeline.tcpPollRead", "true");
      assertTrue(PeerLinks.pollReads(twoHere, 0, 1));
      System.setProperty("treeline.tcpPollRead", "false");
      assertFalse(PeerLinks.pollReads(oneHere, 0, 64));
    } finally {
      if (saved == null) {
        System.clearProperty("treeline.tcpPollRead");
      } else {
        System.setProperty("treeline.tcpPollRead", saved);
      }
    }
  }

  /** The two tests below with the rank threads reading (or not) whatever the cores. */
  @ParameterizedTest(name = "pollRead {0}")
  @ValueSource(strings = {"true", "false"})
  void manyMessagesArriveWhicheverThreadReadsThem(String pollRead) throws Exception {
    String saved = System.getProperty("treeline.tcpPollRead");
    System.setProperty("treeline.tcpPollRead", pollRead);
    try {
      lanesAreIndependentAndCreditsKeepManyMessagesInFlight();
      aMessageSentJustBeforeThePeerClosesIsStillDelivered();
    } finally {
      if (saved == null) {
        System.clearProperty("treeline.tcpPollRead");
      } else {
        System.setProperty("treeline.tcpPollRead", saved);
      }
    }
  }

  @Test
  void lanesAreIndependentAndCreditsKeepManyMessagesInFlight() throws Exception {
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    try (PeerLinks p0 = new PeerLinks(0, SECRET, l0, a, 1024, 2, T);
        PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, T)) {
      connectAll(p0, p1);
      int n = 501;
      Ranks.run(2, 30_000, r -> {
        ByteBuffer b = ByteBuffer.allocateDirect(1024).order(java.nio.ByteOrder.nativeOrder());
        if (r == 0) {
          for (int i = 0; i < n; i++) {
            b.putInt(0, i);
            p0.send(1, i % 3, b, 0, 4 + i % 1000, deadline(), "test");
          }
        } else {
          // each round of three takes lane 2 first although lane 0's message came first: a
          // single FIFO per connection would block here
          for (int round = 0; round < n / 3; round++) {
            for (int lane = 2; lane >= 0; lane--) {
              int i = round * 3 + lane;
              ByteBuffer m = p1.receive(0, lane, 4 + i % 1000, deadline(), "test");
              assertEquals(i, m.getInt(0));
              p1.release(0, lane, deadline(), "test");
            }
          }
        }
      });
    }
  }

  @Test
  void aMessageSentJustBeforeThePeerClosesIsStillDelivered() throws Exception {
    // A peer that finished its part of a collective sends its last message and closes at once
    // (CLOSE, then the socket); the receiver, already waiting, must get the message, not the abort
    // (seen in CI: a dbt call failing with "rank 5 closed its communicator").
    for (int round = 0; round < 60; round++) {
      ServerSocketChannel l0 = listen();
      ServerSocketChannel l1 = listen();
      InetSocketAddress[] a = {addr(l0), addr(l1)};
      try (PeerLinks p0 = new PeerLinks(0, SECRET, l0, a, 1024, 2, T);
          PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, T)) {
        connectAll(p0, p1);
        int r0 = round;
        Ranks.run(2, 30_000, r -> {
          ByteBuffer b = ByteBuffer.allocateDirect(64).order(java.nio.ByteOrder.nativeOrder());
          if (r == 0) {
            b.putInt(0, r0);
            p0.send(1, 1, b, 0, 64, deadline(), "test");
            p0.leave("rank 0 closed its communicator (its task ended)");
          } else {
            assertEquals(r0, p1.receive(0, 1, 64, deadline(), "test").getInt(0));
          }
        });
      }
    }
  }

  @Test
  void aPeerWithTheWrongSecretIsRefusedAndLogged() throws Exception {
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    try (PeerLinks p0 = new PeerLinks(0, "other".getBytes(StandardCharsets.UTF_8), l0, a, 1024,
        2, T);
        PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, T)) {
      CollectiveException e = assertThrows(CollectiveException.class,
          () -> p0.connect(deadline()));
      assertTrue(e.getMessage().contains("refused"), e.getMessage());
      CollectiveException never = assertThrows(CollectiveException.class,
          () -> p1.connect(System.nanoTime() + 300_000_000L));
      assertTrue(never.getMessage().contains("rank 0 to connect"), never.getMessage());
      long until = System.currentTimeMillis() + 5000;
      while (p1.refusedConnections() == 0 && System.currentTimeMillis() < until) {
        Thread.sleep(10);
      }
      assertEquals(1, p1.refusedConnections());
    }
  }

  @Test
  void anOversizedFrameFailsTheLinkInsteadOfBeingRead() throws Exception {
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    l0.close(); // rank 0 is played by hand below
    try (PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, T);
        Socket s = new Socket(a[1].getAddress(), a[1].getPort())) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      Handshake.connect(new DataInputStream(s.getInputStream()), out, SECRET, "treeline-peer", 0);
      out.writeInt(1); // DATA
      out.writeInt(0); // lane 0
      out.writeInt(1 << 30); // 1 GiB into 1 KiB slots
      out.writeInt(0);
      out.writeLong(1); // call sequence, count, meta
      out.writeLong(8);
      out.writeLong(0);
      out.flush();
      p1.connect(deadline());
      CollectiveException e = assertThrows(CollectiveException.class,
          () -> p1.receive(0, 0, 8, System.nanoTime() + Duration.ofSeconds(5).toNanos(), "t"));
      assertTrue(e.getMessage().contains("refused a frame"), e.getMessage());
    }
  }

  @Test
  void theHangReportNamesTheRankTheOthersWaitFor() {
    boolean[] none = new boolean[4];
    boolean[] all = {true, true, true, true};
    // rank 3 never entered call #5
    assertEquals("behind: rank 3 (last call #4), while others are in call #5",
        PeerLinks.behind(new long[] {5, 5, 5, 4}, new boolean[] {true, true, true, false},
            new int[] {3, 0, 3, -1}, all, none));
    // rank 1 is stopped: it cannot answer
    assertEquals("behind: rank 1 did not answer", PeerLinks.behind(new long[] {5, 0, 5, 5},
        new boolean[] {true, false, true, true}, new int[] {1, -1, 1, 0},
        new boolean[] {true, false, true, true}, none));
    // rank 2 is in the call but waits for no one while 0 and 3 wait for it
    assertTrue(PeerLinks.behind(new long[] {5, 5, 5, 5}, all, new int[] {2, 0, -1, 2}, all,
        none).startsWith("behind: rank 2 (in call #5 but waiting for no one"));
  }
}

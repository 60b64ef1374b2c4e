package io.treeline.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
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
      assertTrue(PeerLinks.pollReads(twoHere, 0, 4), "auto is the default");
      assertFalse(PeerLinks.pollReads(twoHere, 0, 2), "auto is the default: 2 ranks, 2 cores");
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

  /**
   * Every byte of messages of mixed sizes, from empty to several times the read stage (64 KiB),
   * on several lanes, arrives as sent, however the stage cuts the stream into reads.
   */
  @Test
  void messagesOfEverySizeArriveIntactThroughTheReadStage() throws Exception {
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    int slot = 300_000;
    int[] sizes = {0, 1, 3, 39, 40, 41, 4096, 65_535, 65_536, 65_577, 131_071, 299_999, 7, 0};
    try (PeerLinks p0 = new PeerLinks(0, SECRET, l0, a, slot, 2, T);
        PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, slot, 2, T)) {
      connectAll(p0, p1);
      Ranks.run(2, 30_000, r -> {
        ByteBuffer b = ByteBuffer.allocateDirect(slot);
        for (int round = 0; round < 20; round++) {
          for (int k = 0; k < sizes.length; k++) {
            int lane = k % 3;
            long seed = round * 1000L + k;
            if (r == 0) {
              java.util.Random rnd = new java.util.Random(seed);
              for (int i = 0; i < sizes[k]; i++) {
                b.put(i, (byte) rnd.nextInt());
              }
              p0.send(1, lane, b, 0, sizes[k], deadline(), "test");
            } else {
              ByteBuffer m = p1.receive(0, lane, sizes[k], deadline(), "test");
              java.util.Random rnd = new java.util.Random(seed);
              for (int i = 0; i < sizes[k]; i++) {
                if (m.get(i) != (byte) rnd.nextInt()) {
                  throw new AssertionError("round " + round + ", message of " + sizes[k]
                      + " bytes: byte " + i + " differs");
                }
              }
              p1.release(0, lane, deadline(), "test");
            }
          }
        }
      });
    }
  }

  /**
   * A small message's credit rides with the receiver's next frame to its sender, or goes alone
   * before the receiver waits: with one slot, the sender's second message waits for it.
   */
  @Test
  void aSmallMessagesCreditGoesWithTheNextFrameOrBeforeAnyWait() throws Exception {
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    try (PeerLinks p0 = new PeerLinks(0, SECRET, l0, a, 1024, 1, T);
        PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 1, T)) {
      connectAll(p0, p1);
      java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch thirdSent = new java.util.concurrent.CountDownLatch(1);
      Ranks.run(2, 30_000, r -> {
        ByteBuffer b = ByteBuffer.allocateDirect(1024);
        try {
          if (r == 0) {
            p0.send(1, 0, b, 0, 16, deadline(), "test");
            released.await();
            // the credit is owed, not written: the second message cannot go yet
            CollectiveException e = assertThrows(CollectiveException.class, () ->
                p0.send(1, 0, b, 0, 16, System.nanoTime() + 300_000_000L, "second"));
            assertTrue(e.getMessage().contains("a credit"), e.getMessage());
            p0.receive(1, 5, 8, deadline(), "answer"); // the answer brought the credit
            p0.release(1, 5, deadline(), "answer");
            p0.send(1, 0, b, 0, 16, deadline(), "second");
            p0.send(1, 0, b, 0, 16, deadline(), "third");
            thirdSent.countDown();
          } else {
            p1.receive(0, 0, 16, deadline(), "test");
            p1.release(0, 0, deadline(), "test");
            released.countDown();
            Thread.sleep(600);
            p1.send(0, 5, b, 0, 8, deadline(), "answer");
            p1.receive(0, 0, 16, deadline(), "second");
            p1.release(0, 0, deadline(), "second");
            p1.flush(deadline(), "before waiting elsewhere"); // the runner's call before a wait
            assertTrue(thirdSent.await(10, java.util.concurrent.TimeUnit.SECONDS),
                "the third message needed the credit flush() wrote");
            p1.receive(0, 0, 16, deadline(), "third");
            p1.release(0, 0, deadline(), "third");
          }
        } catch (InterruptedException e) {
          throw new AssertionError(e);
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
  void aSendToAPeerThatHasAbortedFailsAtOnceNamingTheAbort() throws Exception {
    // A rank resumed after a stall must not push frames into a link whose peer has aborted:
    // the write of one frame to a closed socket succeeds, so only the abort it has read says so
    ServerSocketChannel l0 = listen();
    ServerSocketChannel l1 = listen();
    InetSocketAddress[] a = {addr(l0), addr(l1)};
    try (PeerLinks p0 = new PeerLinks(0, SECRET, l0, a, 1024, 2, T);
        PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, T)) {
      connectAll(p0, p1);
      p1.abort("rank 1 failed: timed out waiting for rank 0");
      ByteBuffer b = ByteBuffer.allocateDirect(64);
      long t0 = System.nanoTime();
      CollectiveException e = null;
      // the abort reaches rank 0's receiver thread within moments; every send after that fails
      while (e == null && System.nanoTime() - t0 < T.toNanos()) {
        try {
          p0.send(1, 0, b, 0, 64, deadline(), "network");
          Thread.sleep(1);
        } catch (CollectiveException thrown) {
          e = thrown;
        }
      }
      assertNotNull(e, "every send succeeded for 10 s after the peer aborted");
      String m = e.getMessage();
      assertTrue(m.startsWith("rank 0, peer 1, network: "), m);
      assertTrue(m.contains("rank 1 failed: timed out waiting for rank 0"), m);
      CollectiveException again = assertThrows(CollectiveException.class,
          () -> p0.send(1, 0, b, 0, 64, deadline(), "network"));
      assertTrue(again.getMessage().contains("could be sent"), again.getMessage());
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

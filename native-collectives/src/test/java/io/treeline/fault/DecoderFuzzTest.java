package io.treeline.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.treeline.bootstrap.Frames;
import io.treeline.bootstrap.Handshake;
import io.treeline.bootstrap.SecureAcceptor;
import io.treeline.core.CollectiveException;
import io.treeline.transport.tcp.PeerLinks;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A seeded, bounded fuzzer of what a stranger or a broken peer can send: the control frames
 * of the store ({@link Frames}), the handshake ({@link SecureAcceptor}) and the peer links'
 * frames ({@link PeerLinks}). Bytes in, a clean exception out: never a hang, never an
 * allocation a length field asked for beyond the limits, never another kind of error, and the
 * component still serves the job afterwards. Seeds are printed by a failure, so it replays.
 */
class DecoderFuzzTest {
  private static final byte[] SECRET = "fuzz-job".getBytes(StandardCharsets.UTF_8);
  private static final long SEED = 0x7EE1_1E5L;

  @Test
  void controlFramesDecodeOrFailCleanly() {
    Random rnd = new Random(SEED);
    int frames = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] in = new byte[rnd.nextInt(64)];
      rnd.nextBytes(in);
      if (in.length >= 8 && rnd.nextBoolean()) { // a plausible length, often just wrong
        ByteBuffer.wrap(in).putInt(4, rnd.nextInt(80) - 8);
      }
      try {
        Frames.Frame f = Frames.read(new DataInputStream(new ByteArrayInputStream(in)), 1024);
        assertTrue(f.payload().length <= 1024);
        frames++;
      } catch (IOException e) {
        // EOF, or a refused length: both clean
      } catch (RuntimeException e) {
        fail("seed " + SEED + " input " + i + ": " + e);
      }
    }
    System.out.println("fuzz: 20000 control frame inputs, " + frames + " decoded, the rest "
        + "refused with IOException");
  }

  @Test
  void theHandshakeAdmitsNoStrangerAndOutlivesThemAll() throws Exception {
    ServerSocketChannel listener = ServerSocketChannel.open();
    listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    InetSocketAddress at = (InetSocketAddress) listener.getLocalAddress();
    AtomicInteger admitted = new AtomicInteger();
    AtomicInteger admittedRank = new AtomicInteger(-1);
    try (SecureAcceptor acceptor = new SecureAcceptor("fuzz", listener, SECRET, "treeline-peer",
        Duration.ofMillis(200), 16, (rank, ch) -> {
          admitted.incrementAndGet();
          admittedRank.set(rank);
          ch.close();
        })) {
      Random rnd = new Random(SEED + 1);
      int n = 300;
      for (int batch = 0; batch < n / 10; batch++) { // ten strangers at a time
        Socket[] ss = new Socket[10];
        for (int j = 0; j < ss.length; j++) {
          Socket s = new Socket(at.getAddress(), at.getPort());
          ss[j] = s;
          s.setSoTimeout(2000);
          if (rnd.nextBoolean()) {
            s.getInputStream().readNBytes(Handshake.NONCE); // a stranger who listens first
          }
          byte[] junk = new byte[rnd.nextInt(4) == 0 ? Handshake.ANSWER : rnd.nextInt(80)];
          rnd.nextBytes(junk);
          s.getOutputStream().write(junk);
          if (rnd.nextInt(10) == 0) {
            s.close(); // hang up at once
          }
        }
        for (int j = 0; j < ss.length; j++) {
          // the acceptor answers a full answer with a refusal, or drops us by its deadline
          try (Socket s = ss[j]) {
            if (!s.isClosed()) {
              while (s.getInputStream().read() >= 0) {
                // drain to the end the acceptor makes
              }
            }
          } catch (java.net.SocketTimeoutException e) {
            fail("seed " + (SEED + 1) + " stranger " + (batch * 10 + j) + ": the acceptor kept "
                + "it past its deadline");
          } catch (IOException e) {
            // reset by the acceptor: clean
          }
        }
      }
      assertEquals(0, admitted.get(), "a stranger was admitted");
      assertTrue(acceptor.pending() <= 16, "pending " + acceptor.pending());
      // still serving: the job's own rank gets in
      try (Socket s = new Socket(at.getAddress(), at.getPort())) {
        Handshake.connect(new DataInputStream(s.getInputStream()),
            new DataOutputStream(s.getOutputStream()), SECRET, "treeline-peer", 3);
      }
      long until = System.currentTimeMillis() + 5000;
      while (admitted.get() == 0 && System.currentTimeMillis() < until) {
        Thread.sleep(5);
      }
      assertEquals(1, admitted.get());
      assertEquals(3, admittedRank.get());
      System.out.println("fuzz: " + n + " hostile handshakes, 0 admitted, " + acceptor.refused()
          + " refused; the real rank admitted after them");
    }
  }

  @Test
  void peerFramesFromABrokenPeerFailTheLinkCleanly() throws Exception {
    Random rnd = new Random(SEED + 2);
    int rounds = 150;
    int clean = 0;
    for (int i = 0; i < rounds; i++) {
      ServerSocketChannel l0 = ServerSocketChannel.open();
      l0.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      ServerSocketChannel l1 = ServerSocketChannel.open();
      l1.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      InetSocketAddress[] a = {(InetSocketAddress) l0.getLocalAddress(),
          (InetSocketAddress) l1.getLocalAddress()};
      l0.close(); // rank 0 is the fuzzer
      try (PeerLinks p1 = new PeerLinks(1, SECRET, l1, a, 1024, 2, Duration.ofSeconds(3));
          Socket s = new Socket(a[1].getAddress(), a[1].getPort())) {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        Handshake.connect(new DataInputStream(s.getInputStream()), out, SECRET,
            "treeline-peer", 0);
        p1.connect(System.nanoTime() + 3_000_000_000L);
        out.write(frames(rnd));
        out.flush();
        s.shutdownOutput(); // then the broken peer is gone
        long t0 = System.nanoTime();
        try {
          p1.receive(0, rnd.nextInt(3), 8, System.nanoTime() + 3_000_000_000L, "fuzz");
        } catch (CollectiveException e) {
          clean++;
        } catch (RuntimeException e) {
          fail("seed " + (SEED + 2) + " round " + i + ": " + e);
        }
        assertTrue(System.nanoTime() - t0 < 3_500_000_000L, "round " + i + " hung");
      }
    }
    System.out.println("fuzz: " + rounds + " broken peers, " + clean + " links failed with a "
        + "CollectiveException, the rest delivered a well-formed frame");
  }

  /** Frames with random fields (types 0..7, any lane and length), or raw bytes. */
  private static byte[] frames(Random rnd) {
    ByteBuffer b = ByteBuffer.allocate(4096);
    int n = 1 + rnd.nextInt(4);
    for (int k = 0; k < n && b.remaining() > 200; k++) {
      if (rnd.nextInt(4) == 0) {
        byte[] raw = new byte[rnd.nextInt(100)];
        rnd.nextBytes(raw);
        b.put(raw);
        continue;
      }
      int len = rnd.nextBoolean() ? rnd.nextInt(64) : rnd.nextInt();
      b.putInt(rnd.nextInt(8)).putInt(rnd.nextInt(3) == 0 ? rnd.nextInt() : rnd.nextInt(4))
          .putInt(len).putInt(0).putLong(rnd.nextInt(3)).putLong(rnd.nextInt(3))
          .putLong(rnd.nextInt(3));
      byte[] payload = new byte[Math.max(0, Math.min(len, 100))];
      rnd.nextBytes(payload);
      b.put(payload);
    }
    return java.util.Arrays.copyOf(b.array(), b.position());
  }
}

package io.treeline.transport.shm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.exec.CallDescriptor;
import io.treeline.core.CollectiveException;
import io.treeline.exec.PeerWatch;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PeerFlagsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  /** A local peer's segment owned by a real process that exits without a word. */
  @Test
  void aDeadLocalProcessIsNoticedWithinASecondNotAfterTenThousandsOfPolls(@TempDir Path dir)
      throws Exception {
    Process peer = new ProcessBuilder("sleep", "0.3").start();
    try (SharedSegment own = SharedSegment.create(dir.resolve("treeline-t-r0-p1"), 0, 64);
        SharedSegment theirs = SharedSegment.create(dir.resolve("treeline-t-r1-p2"), 1, 64)) {
      PeerWatch watch = new PeerWatch(0, TIMEOUT);
      PeerFlags flags = new PeerFlags(0, new SharedSegment[] {own, theirs},
          new long[] {ProcessHandle.current().pid(), peer.pid()}, TIMEOUT, () -> false, watch);
      watch.addCheck(flags::scan);
      peer.waitFor();
      long exited = System.nanoTime();
      CollectiveException e = assertThrows(CollectiveException.class, () -> flags.await(1, 9,
          System.nanoTime() + TIMEOUT.toNanos(), "test", 1, new CallDescriptor(1, 0)));
      long took = (System.nanoTime() - exited) / 1_000_000;
      assertTrue(e.getMessage().contains("has exited"), e.getMessage());
      assertTrue(took < 1000, "noticed after " + took + " ms");
      System.out.println("dead local peer noticed after " + took + " ms: " + e.getMessage());
    } finally {
      peer.destroyForcibly();
    }
  }

  @Test
  void aLocalPeerThatLeftAfterThisCallDoesNotFailItButOneThatLeftBeforeDoes(@TempDir Path dir)
      throws Exception {
    try (SharedSegment own = SharedSegment.create(dir.resolve("treeline-t-r0-p1"), 0, 64);
        SharedSegment theirs = SharedSegment.create(dir.resolve("treeline-t-r1-p2"), 1, 64)) {
      long me = ProcessHandle.current().pid();
      PeerWatch watch = new PeerWatch(0, TIMEOUT);
      PeerFlags flags = new PeerFlags(0, new SharedSegment[] {own, theirs}, new long[] {me, me},
          TIMEOUT, () -> false, watch);
      theirs.beginCall(3, 1, 0);
      theirs.signal(3 * 8 + 1);
      theirs.leave("rank 1 closed its communicator (its task ended)");
      flags.await(1, 3 * 8 + 1, System.nanoTime() + TIMEOUT.toNanos(), "test", 3,
          new CallDescriptor(1, 0)); // it finished call 3: what we wait for is there
      CollectiveException e = assertThrows(CollectiveException.class, () -> flags.await(1,
          4 * 8 + 1, System.nanoTime() + TIMEOUT.toNanos(), "test", 4, new CallDescriptor(1, 0)));
      assertTrue(e.getMessage().contains("local rank 1 left"), e.getMessage());
      flags.scan(watch);
      watch.beginCall(3, "test"); // a call it made: fine
      assertThrows(CollectiveException.class, () -> watch.beginCall(4, "test"));
    }
  }

  /**
   * The call words' seqlock: a reader racing the owner's publishing of its next calls accepts
   * only snapshots of one call. Before it, the plain reads gave "rank 0 is in call #396135
   * (allreduce of 1 x f64, max) but rank 1 is in call #396135 (allreduce of 1 x f32, sum)": the
   * old call's count with the next call's meta (PeerBench, 2 and 8 ranks, 2026-12-04).
   */
  @Test
  void aReaderRacingThePublishingOfTheNextCallNeverSeesHalfOfEach(@TempDir Path dir)
      throws Exception {
    try (SharedSegment seg = SharedSegment.create(dir.resolve("treeline-t-r0-p1"), 0, 64)) {
      java.util.concurrent.atomic.AtomicBoolean done =
          new java.util.concurrent.atomic.AtomicBoolean();
      Thread owner = new Thread(() -> {
        for (long seq = 1; !done.get(); seq++) {
          seg.beginCall(seq, seq * 3, seq * 7);
        }
      });
      owner.start();
      long[] into = new long[2];
      long checked = 0;
      long end = System.nanoTime() + 1_000_000_000L;
      try {
        while (System.nanoTime() < end) {
          long seq = seg.callSequence();
          if (seq != SharedSegment.WRITING && seg.readCall(seq, into)) {
            checked++;
            if (into[0] != seq * 3 || into[1] != seq * 7) {
              throw new AssertionError("call " + seq + " read as count " + into[0] + ", meta "
                  + into[1] + " (a torn snapshot) after " + checked + " good ones");
            }
          }
        }
      } finally {
        done.set(true);
        owner.join(10_000);
      }
      assertTrue(checked > 0, "no snapshot was taken in a second");
      System.out.println("call words: " + checked + " consistent snapshots in 1 s");
    }
  }
}

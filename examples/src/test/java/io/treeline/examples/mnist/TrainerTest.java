package io.treeline.examples.mnist;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Short trainings on the real data, ranks as threads over a real communicator. */
class TrainerTest {
  private static FashionMnist data;

  @BeforeAll
  static void load() throws Exception {
    Assumptions.assumeTrue(Files.exists(FashionMnist.DEFAULT_DIR.resolve(
        "train-images-idx3-ubyte.gz")), "dataset-fashion-mnist is not installed");
    data = FashionMnist.load(FashionMnist.DEFAULT_DIR);
  }

  static Trainer.Result[] train(int ranks, Trainer.Options o) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Trainer.Result[] out = new Trainer.Result[ranks];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      int rank = r;
      Thread t = new Thread(() -> {
        try (TcpStoreBootstrap boot = TcpStoreBootstrap.create(rank, ranks, "127.0.0.1", port,
            "t".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(60));
            HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
          out[rank] = Trainer.train(c, data, o, null, null);
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(300_000);
    }
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    return out;
  }

  private static Trainer.Options small(int epochs) {
    return new Trainer.Options(new int[] {64, 32}, epochs, 64, 0.05f, 0.9f, 0.85f, 7, 3200);
  }

  @Test
  void twoAndFourRanksKeepIdenticalReplicasAndTheLossFalls() throws Exception {
    for (int ranks : new int[] {2, 4}) {
      Trainer.Result[] r = train(ranks, small(3));
      for (int k = 1; k < ranks; k++) {
        assertArrayEquals(r[0].weights(), r[k].weights(), 0f, "rank " + k + " of " + ranks);
      }
      List<Trainer.Epoch> h = r[0].history();
      assertEquals(3, h.size());
      assertTrue(h.get(2).loss() < h.get(0).loss(), ranks + " ranks: " + h);
      assertTrue(h.get(2).testAccuracy() > 0.6, ranks + " ranks: " + h);
    }
  }

  @Test
  void oneRankAndFourRanksWithTheSameGlobalBatchLearnTheSameModel() throws Exception {
    float[] one = train(1, small(1))[0].weights();
    float[] four = train(4, small(1))[0].weights();
    double maxDiff = 0;
    double maxW = 0;
    for (int i = 0; i < one.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(one[i] - four[i]));
      maxW = Math.max(maxW, Math.abs(one[i]));
    }
    // the same samples in the same steps; only the order of float additions differs
    assertTrue(maxDiff < 1e-3 * maxW, "max |w1 - w4| = " + maxDiff + " (max |w| " + maxW + ")");
    System.out.printf("1 vs 4 ranks after one epoch: max |difference| %.2e (max |w| %.2f)%n",
        maxDiff, maxW);
  }
}

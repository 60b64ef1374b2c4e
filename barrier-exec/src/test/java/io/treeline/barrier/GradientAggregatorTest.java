package io.treeline.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Ranks as threads joined through a real TCP store; the aggregator needs no Spark. */
class GradientAggregatorTest {
  private static final int[] SIZES = {1, 7, 1021, 300, 4099, 13};

  private static float value(int step, int rank, int grad, int i) {
    return (float) new Random(((long) step * 1000 + rank) * 1000 + grad * 7919L + i)
        .nextGaussian();
  }

  /**
   * The segment decides where buckets live: 32 MiB holds every 8 KiB bucket in a registered
   * window (copied once in, once out); 64 KiB none (each bucket copies through its own buffer);
   * 1 MiB + 12 KiB (1 MiB kept for ordinary calls) some: those that fit the 12 KiB in order.
   */
  @ParameterizedTest(name = "segment {0} bytes")
  @CsvSource({"33554432, all", "65536, none", "1060864, some"})
  void bucketsAverageEveryGradientOnEveryRankStepAfterStep(long segmentBytes, String windows)
      throws Exception {
    int n = 3;
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    byte[] secret = "grad".getBytes(StandardCharsets.UTF_8);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    int[] bucketCount = new int[n];
    int[] registered = new int[n];
    for (int r = 0; r < n; r++) {
      int rank = r;
      Thread t = new Thread(() -> {
        try (TcpStoreBootstrap boot = TcpStoreBootstrap.create(rank, n, "127.0.0.1", port,
            secret, Duration.ofSeconds(30));
            HostCommunicator comm = HostCommunicator.create(boot, CommConfig.DEFAULT
                .withSegmentBytes(segmentBytes));
            GradientAggregator agg = new GradientAggregator(comm, 8 << 10)) {
          float[][] grads = new float[SIZES.length][];
          for (int g = 0; g < SIZES.length; g++) {
            grads[g] = new float[SIZES[g]];
            agg.register(grads[g]);
          }
          double[] extra = new double[77];
          int extraId = agg.register(extra);
          bucketCount[rank] = agg.buckets();
          registered[rank] = agg.registeredBuckets();
          for (int step = 0; step < 3; step++) {
            for (int g = 0; g < SIZES.length; g++) {
              for (int i = 0; i < SIZES[g]; i++) {
                grads[g][i] = value(step, rank, g, i);
              }
            }
            for (int i = 0; i < extra.length; i++) {
              extra[i] = rank * 10.0 + i;
            }
            agg.ready(extraId);
            for (int g = SIZES.length - 1; g >= 0; g--) { // backward order
              agg.ready(g);
            }
            agg.await();
            for (int g = 0; g < SIZES.length; g++) {
              for (int i = 0; i < SIZES[g]; i++) {
                double ref = 0;
                for (int k = 0; k < n; k++) {
                  ref += value(step, k, g, i);
                }
                ref /= n;
                assertTrue(Math.abs(grads[g][i] - ref) <= 1e-6 * (1 + Math.abs(ref)),
                    "rank " + rank + " step " + step + " grad " + g + "[" + i + "]: "
                        + grads[g][i] + " vs " + ref);
              }
            }
            for (int i = 0; i < extra.length; i++) {
              assertEquals(10.0 + i, extra[i], 1e-12); // mean of 0, 10, 20 plus i
            }
          }
          assertThrows(IllegalStateException.class, () -> agg.register(new float[1]));
          // ordinary calls still work beside the windows, on what the windows left
          java.nio.ByteBuffer x = java.nio.ByteBuffer.allocateDirect(4 * 5000)
              .order(java.nio.ByteOrder.nativeOrder());
          for (int i = 0; i < 5000; i++) {
            x.putFloat(4 * i, rank + i);
          }
          comm.allReduce(x, x, 5000, io.treeline.core.DataType.F32,
              io.treeline.core.ReduceOp.SUM);
          for (int i = 0; i < 5000; i++) {
            assertEquals(3f * i + 3, x.getFloat(4 * i), "ordinary allreduce element " + i);
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "rank-" + r);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(120_000);
    }
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    // 8 KiB buckets: 1+7+1021 floats fill the first, 300+4099 overflow, then a double bucket
    assertTrue(bucketCount[0] >= 3, "buckets: " + bucketCount[0]);
    String where = registered[0] + " of " + bucketCount[0] + " buckets in registered windows";
    switch (windows) {
      case "all" -> assertEquals(bucketCount[0], registered[0], where);
      case "none" -> assertEquals(0, registered[0], where);
      default -> assertTrue(registered[0] > 0 && registered[0] < bucketCount[0], where);
    }
  }
}

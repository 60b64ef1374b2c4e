package io.treeline.examples.bench;

import io.treeline.barrier.GradientAggregator;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * Time per step of {@link GradientAggregator#allReduce()} for a model's gradients (float[]
 * arrays, DDP-style buckets), one rank per JVM:
 * {@code ./treeline run --nodes 1 --ranks-per-node 2 -- io.treeline.examples.bench.AggregatorBench
 * [steps]}. Models: the MLP of ./treeline train (784-256-128-10, 0.9 MiB of gradients) and one of
 * 24 MiB (four 6 MiB layers, one 25 MiB bucket). Every step's averages are checked. With a
 * second argument {@code copy} the segment's room for windows is taken first, so the buckets
 * copy through their own buffers (the aggregator before registered windows), for comparison.
 */
public final class AggregatorBench {
  private AggregatorBench() {
  }

  public static void main(String[] args) throws Exception {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 50;
    boolean copy = args.length > 1 && args[1].equals("copy");
    int[][] models = {
        {784 * 256, 256, 256 * 128, 128, 128 * 10, 10},
        {3 << 19, 3 << 19, 3 << 19, 3 << 19}};
    String[] names = {"mlp 0.9 MiB", "24 MiB"};
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(60));
        HostCommunicator comm = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      if (copy && comm.windowBytesLeft() > 0) {
        comm.reserveWindow(comm.windowBytesLeft());
      }
      int rank = comm.rank();
      int n = comm.size();
      if (rank == 0) {
        System.out.printf("# GradientAggregator.allReduce() per step, %d ranks, %d steps, "
            + "bucket 25 MiB, segment %d MiB%n", n, steps, comm.config().segmentBytes() >> 20);
        System.out.printf("# %-12s %8s %8s %10s %10s %10s%n", "model", "buckets", "in-place",
            "median", "p99", "GB/s");
      }
      for (int m = 0; m < models.length; m++) {
        float[][] grads = new float[models[m].length][];
        long bytes = 0;
        try (GradientAggregator agg = new GradientAggregator(comm, 25L << 20)) {
          for (int g = 0; g < grads.length; g++) {
            grads[g] = new float[models[m][g]];
            agg.register(grads[g]);
            bytes += 4L * grads[g].length;
          }
          long[] each = new long[steps];
          for (int s = -5; s < steps; s++) { // 5 untimed
            for (float[] g : grads) {
              Arrays.fill(g, rank + 1 + s % 7);
            }
            long t0 = System.nanoTime();
            agg.allReduce();
            long dt = System.nanoTime() - t0;
            float want = (n + 1) / 2f + s % 7;
            for (float[] g : grads) {
              if (g[0] != want || g[g.length - 1] != want) {
                throw new AssertionError("rank " + rank + " step " + s + ": " + g[0] + " != "
                    + want);
              }
            }
            if (s >= 0) {
              each[s] = dt;
            }
          }
          Arrays.sort(each);
          double median = each[(steps - 1) / 2] / 1e3;
          double p99 = each[(int) Math.ceil(0.99 * steps) - 1] / 1e3;
          if (rank == 0) {
            System.out.printf(Locale.ROOT, "  %-12s %8d %8s %10.1f %10.1f %10.2f%n", names[m],
                agg.buckets(), inPlace(agg), median, p99, bytes / median / 1e3);
          }
        }
      }
    }
  }

  /** Buckets in registered windows, where this version of the aggregator has them. */
  private static String inPlace(GradientAggregator agg) {
    try {
      return String.valueOf(agg.getClass().getMethod("registeredBuckets").invoke(agg));
    } catch (ReflectiveOperationException e) {
      return "-";
    }
  }
}

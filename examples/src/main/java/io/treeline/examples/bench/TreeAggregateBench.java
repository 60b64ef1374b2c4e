package io.treeline.examples.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;

/**
 * Spark's side of scripts/bench/peers.sh: {@code RDD.treeAggregate} (depth 2, what MLlib's
 * optimisers use to sum gradients) of one float32 vector per partition, on {@code local[K]}
 * with K partitions, timed like {@link PeerBench}: per size a few warm-up aggregations, then
 * each one timed; partition r's element i is 1 + r % 5 + i % 3 and every element of the
 * driver's result is checked. The vectors are made once per size and cached, so a call times
 * the aggregation alone (tasks, serialising the partial sums, shuffling them to the driver),
 * which leaves the result on the driver only: an allreduce would broadcast it back on top.
 *
 * <pre>
 *   java -cp ... io.treeline.examples.bench.TreeAggregateBench RANKS MIN MAX FACTOR
 * </pre>
 * Prints CSV rows {@code system,dtype,ranks,bytes,iters,median_us,p99_us,wrong,first_us}, system
 * {@code spark}.
 */
public final class TreeAggregateBench {
  private TreeAggregateBench() {
  }

  public static void main(String[] args) {
    int k = Integer.parseInt(args[0]);
    long min = Long.parseLong(args[1]);
    long max = Long.parseLong(args[2]);
    int factor = Integer.parseInt(args[3]);
    SparkConf conf = new SparkConf().setMaster("local[" + k + "]")
        .setAppName("treeAggregate bench").set("spark.ui.enabled", "false")
        .set("spark.driver.maxResultSize", "0")
        .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        // a 64 MiB vector does not fit Kryo's default 64m buffer: local[8] failed with
        // KRYO_BUFFER_OVERFLOW (2026-12-07), as an MLlib job with such vectors would
        .set("spark.kryoserializer.buffer.max", "1g");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.setLogLevel("ERROR");
      List<Integer> parts = new ArrayList<>();
      for (int r = 0; r < k; r++) {
        parts.add(r);
      }
      for (long bytes = Math.max(min, 4); bytes <= max; bytes *= factor) {
        int count = (int) (bytes / 4);
        JavaRDD<float[]> vectors = sc.parallelize(parts, k).map(r -> {
          float[] v = new float[count];
          for (int i = 0; i < count; i++) {
            v[i] = 1 + r % 5 + i % 3;
          }
          return v;
        }).persist(StorageLevel.MEMORY_ONLY());
        vectors.count();
        int iters = iterations(bytes);
        long t1 = System.nanoTime();
        aggregate(vectors, count);
        double first = (System.nanoTime() - t1) / 1e3;
        for (int w = 0; w < warmups(bytes); w++) {
          aggregate(vectors, count);
        }
        long[] each = new long[iters];
        float[] sum = null;
        for (int it = 0; it < iters; it++) {
          long t0 = System.nanoTime();
          sum = aggregate(vectors, count);
          each[it] = System.nanoTime() - t0;
        }
        long wrong = 0;
        for (int i = 0; i < count; i++) {
          double want = 0;
          for (int r = 0; r < k; r++) {
            want += 1 + r % 5 + i % 3;
          }
          if (sum[i] != want) {
            wrong++;
          }
        }
        vectors.unpersist(true);
        Arrays.sort(each);
        System.out.printf(Locale.ROOT, "spark,f32,%d,%d,%d,%.3f,%.3f,%d,%.3f%n", k, bytes,
            iters, each[(iters - 1) / 2] / 1e3, each[(int) Math.ceil(0.99 * iters) - 1] / 1e3,
            wrong, first);
      }
    }
  }

  private static float[] aggregate(JavaRDD<float[]> vectors, int count) {
    return vectors.treeAggregate(new float[count], TreeAggregateBench::add,
        TreeAggregateBench::add, 2);
  }

  private static float[] add(float[] acc, float[] v) {
    for (int i = 0; i < acc.length; i++) {
      acc[i] += v[i];
    }
    return acc;
  }

  /** Fewer than PeerBench's: one aggregation costs milliseconds even when empty. */
  static int iterations(long bytes) {
    return (int) Math.max(5, Math.min(50, (256L << 20) / Math.max(1, bytes) / 16));
  }

  static int warmups(long bytes) {
    return (int) Math.max(2, Math.min(20, (64L << 20) / Math.max(1, bytes)));
  }
}

package io.treeline.it.app;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.GradientAggregator;
import io.treeline.barrier.Treeline;
import java.io.Serializable;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A user's application as spark-submit runs it: the test jars this package alone into an
 * application jar; Treeline comes from the shaded jar in {@code --jars}, Spark from the
 * cluster. Softmax regression on synthetic data (three Gaussian classes), data-parallel in one
 * barrier stage: one partition per rank, gradients averaged every step by
 * {@link GradientAggregator#forTask()} (bucket size from {@code spark.treeline.bucketBytes}).
 *
 * <p>On the driver it checks that every replica ended bit-identical and that the result equals
 * full-batch gradient descent on all the data computed here sequentially (equal shards: the
 * mean of the shards' mean gradients is the full-batch gradient), then prints one line
 * {@code TREELINE-RESULT key=value ...}, also written to {@code --out FILE} where given (in
 * YARN cluster mode the driver's stdout is a container log). Exits non-zero when a check fails.
 *
 * <p>Arguments: {@code --ranks N --steps S --out FILE}.
 */
public final class TrainApp {
  static final int D = 8;
  static final int K = 3;
  static final int ROWS_PER_RANK = 400;
  static final float LR = 0.5f;

  private TrainApp() {
  }

  /** What one rank sends back: its final parameters and where it ran. */
  public record RankResult(int rank, float[] params, String executor, String gpu)
      implements Serializable {
  }

  public static void main(String[] args) throws Exception {
    int ranks = 2;
    int steps = 60;
    Path out = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--ranks" -> ranks = Integer.parseInt(args[++i]);
        case "--steps" -> steps = Integer.parseInt(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    long t0 = System.nanoTime();
    SparkConf conf = new SparkConf();
    if (!conf.contains("spark.app.name")) {
      conf.setAppName("treeline-train-app"); // spark-submit --name wins
    }
    List<float[]> data = data(ranks * ROWS_PER_RANK);
    List<RankResult> results;
    String master;
    String appId;
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      master = sc.master();
      appId = sc.sc().applicationId();
      JavaRDD<float[]> shards = sc.parallelize(data, ranks);
      final int s = steps;
      results = BarrierJobs.collect(shards, (partition, it) -> {
        List<float[]> rows = new ArrayList<>();
        it.forEachRemaining(rows::add);
        float[] params = new float[K * (D + 1)];
        float[] grad = new float[params.length];
        try (GradientAggregator agg = GradientAggregator.forTask()) {
          agg.register(grad);
          for (int step = 0; step < s; step++) {
            gradient(params, rows, grad);
            agg.allReduce(); // grad = mean over the ranks
            for (int i = 0; i < params.length; i++) {
              params[i] -= LR * grad[i];
            }
          }
        }
        // under YARN: the container and the NodeManager (its port) it ran on
        String container = System.getenv("CONTAINER_ID");
        String executor = SparkEnv.get().executorId() + "/pid"
            + ProcessHandle.current().pid() + "@" + InetAddress.getLocalHost().getHostName()
            + (container == null ? "" : "/" + container + "/nm" + System.getenv("NM_PORT"));
        return List.of(new RankResult(Treeline.communicator().rank(), params, executor,
            gpuOf())).iterator();
      });
    }
    boolean identical = results.stream().allMatch(r -> Arrays.equals(r.params(),
        results.get(0).params()));
    float[] reference = new float[K * (D + 1)];
    float[] g = new float[reference.length];
    for (int step = 0; step < steps; step++) {
      gradient(reference, data, g);
      for (int i = 0; i < reference.length; i++) {
        reference[i] -= LR * g[i];
      }
    }
    double maxDiff = 0;
    for (int i = 0; i < reference.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(reference[i] - results.get(0).params()[i]));
    }
    float[] p = results.get(0).params();
    String line = String.format(java.util.Locale.ROOT, "TREELINE-RESULT master=%s app=%s "
        + "ranks=%d steps=%d identical=%s maxDiffFromSequential=%.3g loss=%.4f accuracy=%.4f "
        + "seconds=%.1f executors=%s gpus=%s", master, appId, results.size(), steps, identical,
        maxDiff, loss(p, data), accuracy(p, data), (System.nanoTime() - t0) / 1e9,
        String.join(",", results.stream().map(RankResult::executor).toList()),
        String.join(",", results.stream().map(RankResult::gpu).toList()));
    System.out.println(line);
    if (out != null) {
      Files.writeString(out, line + "\n", StandardCharsets.UTF_8);
    }
    if (!identical || maxDiff > 1e-4 || results.size() != ranks) {
      throw new IllegalStateException("the training job's checks failed: " + line);
    }
  }

  /**
   * The GPU Spark assigned to this task as Treeline binds it (address/nvidia-smi index/UUID/
   * CUDA ordinal), or "none".
   */
  static String gpuOf() {
    io.treeline.barrier.GpuBinding.Bound b = io.treeline.barrier.GpuBinding.forTask();
    return b == null ? "none" : b.address() + "/" + b.smiIndex() + "/" + b.uuid() + "/"
        + b.cudaOrdinal();
  }

  /** Three classes with means on a circle, unit variance; last column is the label. */
  static List<float[]> data(int n) {
    SplittableRandom r = new SplittableRandom(17);
    List<float[]> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int label = i % K;
      float[] row = new float[D + 1];
      for (int j = 0; j < D; j++) {
        double mean = j < 2 ? 2.5 * (j == 0 ? Math.cos(label * 2.1) : Math.sin(label * 2.1)) : 0;
        row[j] = (float) (mean + r.nextGaussian());
      }
      row[D] = label;
      rows.add(row);
    }
    return rows;
  }

  /** Mean softmax cross-entropy gradient over the rows; params are K rows of D weights + bias. */
  static void gradient(float[] params, List<float[]> rows, float[] grad) {
    Arrays.fill(grad, 0f);
    float[] z = new float[K];
    for (float[] x : rows) {
      softmax(params, x, z);
      int y = (int) x[D];
      for (int k = 0; k < K; k++) {
        float e = (z[k] - (k == y ? 1f : 0f)) / rows.size();
        int o = k * (D + 1);
        for (int j = 0; j < D; j++) {
          grad[o + j] += e * x[j];
        }
        grad[o + D] += e;
      }
    }
  }

  static void softmax(float[] params, float[] x, float[] z) {
    float max = Float.NEGATIVE_INFINITY;
    for (int k = 0; k < K; k++) {
      int o = k * (D + 1);
      float a = params[o + D];
      for (int j = 0; j < D; j++) {
        a += params[o + j] * x[j];
      }
      z[k] = a;
      max = Math.max(max, a);
    }
    float sum = 0;
    for (int k = 0; k < K; k++) {
      z[k] = (float) Math.exp(z[k] - max);
      sum += z[k];
    }
    for (int k = 0; k < K; k++) {
      z[k] /= sum;
    }
  }

  static double loss(float[] params, List<float[]> rows) {
    float[] z = new float[K];
    double l = 0;
    for (float[] x : rows) {
      softmax(params, x, z);
      l -= Math.log(Math.max(1e-12, z[(int) x[D]]));
    }
    return l / rows.size();
  }

  static double accuracy(float[] params, List<float[]> rows) {
    float[] z = new float[K];
    int ok = 0;
    for (float[] x : rows) {
      softmax(params, x, z);
      int best = 0;
      for (int k = 1; k < K; k++) {
        if (z[k] > z[best]) {
          best = k;
        }
      }
      ok += best == (int) x[D] ? 1 : 0;
    }
    return ok / (double) rows.size();
  }
}

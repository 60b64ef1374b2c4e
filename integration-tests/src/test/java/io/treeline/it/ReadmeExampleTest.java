package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.GradientAggregator;
import io.treeline.barrier.Treeline;
import io.treeline.core.Communicator;
import io.treeline.core.ReduceOp;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * The README's "Use it from Spark" example, run: data-parallel least squares, one partition
 * per rank, weights broadcast from rank 0, gradients averaged by GradientAggregator every step.
 * The replicas must stay identical and find the true weights; the README's text must be this
 * file's code.
 */
class ReadmeExampleTest {
  static final int DIM = 17;

  static float[] trueWeights() {
    float[] w = new float[DIM];
    for (int i = 0; i < DIM; i++) {
      w[i] = (float) Math.sin(i + 1);
    }
    return w;
  }

  /** A start that differs per rank (the example's broadcast makes them agree). */
  static float[] randomWeights(Random rnd) {
    float[] w = new float[DIM];
    for (int i = 0; i < DIM; i++) {
      w[i] = (float) rnd.nextGaussian();
    }
    return w;
  }

  static double meanSquaredError(float[] w, List<float[]> rows) {
    double sum = 0;
    for (float[] x : rows) {
      double err = -x[DIM];
      for (int i = 0; i < DIM; i++) {
        err += x[i] * w[i];
      }
      sum += err * err;
    }
    return sum / rows.size();
  }

  /** The lines between the markers in this file, without their common indentation. */
  static String between(String text, String from, String to) {
    int a = text.indexOf(from);
    int b = text.indexOf(to, a);
    assertTrue(a >= 0 && b > a, "markers " + from + " / " + to + " not found");
    String[] lines = text.substring(text.indexOf('\n', a) + 1, b).split("\n", -1);
    int indent = Integer.MAX_VALUE;
    for (String l : lines) {
      if (!l.isBlank()) {
        indent = Math.min(indent, l.length() - l.stripLeading().length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String l : lines) {
      if (!l.isBlank()) {
        out.append(l.substring(indent).stripTrailing()).append('\n');
      }
    }
    return out.toString();
  }

  @Test
  void theReadmeShowsExactlyTheCodeThisTestRuns() throws Exception {
    String readme = Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8);
    String source = Files.readString(Path.of("src", "test", "java", "io", "treeline", "it",
        "ReadmeExampleTest.java"), StandardCharsets.UTF_8);
    String shown = between(readme.substring(readme.indexOf("Inside the job (")), "```java",
        "```\n");
    // the markers are split here, so that only the real ones below match
    assertEquals(between(source, "// ---- the README example, " + "from here ----",
        "// ---- to " + "here ----"), shown, "README.md's example and ReadmeExampleTest differ: "
        + "change both");
  }

  /** Least-squares gradient of (x.w - y)^2 / 2 over the rows. */
  static void computeGradient(float[] w, List<float[]> rows, float[] grad) {
    java.util.Arrays.fill(grad, 0f);
    for (float[] x : rows) {
      float err = -x[DIM];
      for (int i = 0; i < DIM; i++) {
        err += x[i] * w[i];
      }
      for (int i = 0; i < DIM; i++) {
        grad[i] += err * x[i] / rows.size();
      }
    }
  }

  @Test
  void dataParallelLeastSquaresConvergesWithIdenticalReplicas() {
    SparkConf conf = new SparkConf().setMaster("local[4]").setAppName("treeline-readme")
        .set("spark.plugins", "io.treeline.spark.TreelinePlugin")
        .set("spark.ui.enabled", "false");
    List<float[]> data = new ArrayList<>();
    Random rnd = new Random(3);
    float[] truth = trueWeights();
    for (int n = 0; n < 2000; n++) {
      float[] row = new float[DIM + 1];
      for (int i = 0; i < DIM; i++) {
        row[i] = (float) rnd.nextGaussian();
        row[DIM] += row[i] * truth[i];
      }
      data.add(row);
    }
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      // ---- the README example, from here ----
      JavaRDD<float[]> shards = sc.parallelize(data, 4);         // one partition per rank
      List<float[]> models = BarrierJobs.collect(shards, (partition, it) -> {
        List<float[]> rows = new ArrayList<>();
        it.forEachRemaining(rows::add);
        Communicator comm = Treeline.communicator();             // rank() == partition
        float[] weights = randomWeights(new Random(partition));  // differs per rank...
        comm.broadcast(weights, 0);                              // ...until rank 0's reach all
        float[] grad = new float[DIM];
        try (GradientAggregator agg = new GradientAggregator(comm)) { // conf's bucketBytes
          agg.register(grad);
          for (int step = 0; step < 200; step++) {
            computeGradient(weights, rows, grad);                // your model's backward pass
            agg.allReduce();                                     // grad = mean over all ranks
            for (int i = 0; i < DIM; i++) {
              weights[i] -= 0.1f * grad[i];
            }
          }
        }
        double[] loss = {meanSquaredError(weights, rows)};
        comm.allReduce(loss, ReduceOp.AVG);                      // the mean over ranks, everywhere
        if (comm.rank() == 0) {
          System.out.println("mean squared error " + loss[0]);
        }
        return List.of(weights).iterator();
      });
      // ---- to here ----
      for (float[] m : models) {
        assertArrayEquals(models.get(0), m, 0f); // bit-identical replicas
      }
      for (int i = 0; i < DIM; i++) {
        assertTrue(Math.abs(models.get(0)[i] - truth[i]) < 1e-3, "weight " + i + ": "
            + models.get(0)[i] + " vs " + truth[i]);
      }
    }
  }
}

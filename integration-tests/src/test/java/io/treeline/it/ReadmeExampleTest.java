package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.GradientAggregator;
import io.treeline.barrier.Treeline;
import io.treeline.spark.TreelinePlugin;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * The README's "Use it from Spark" example, run: data-parallel least squares, one partition
 * per rank, gradients averaged by GradientAggregator every step. The replicas must stay
 * identical and find the true weights.
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
        .set("spark.plugins", TreelinePlugin.class.getName()).set("spark.ui.enabled", "false");
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
      JavaRDD<float[]> shards = sc.parallelize(data, 4);       // one partition per rank
      List<float[]> models = BarrierJobs.collect(shards, (partition, it) -> {
        List<float[]> rows = new ArrayList<>();
        it.forEachRemaining(rows::add);
        float[] weights = new float[DIM];
        float[] grad = new float[DIM];
        GradientAggregator agg = new GradientAggregator(Treeline.communicator(), 25 << 20);
        agg.register(grad);
        for (int step = 0; step < 200; step++) {
          computeGradient(weights, rows, grad);                // your model's backward pass
          agg.allReduce();                                     // grad = mean over all ranks
          for (int i = 0; i < DIM; i++) {
            weights[i] -= 0.1f * grad[i];
          }
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

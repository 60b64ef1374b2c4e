package io.treeline.examples.mnist;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.MultilayerPerceptronClassificationModel;
import org.apache.spark.ml.classification.MultilayerPerceptronClassifier;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * What Spark users have today: MLlib's {@code MultilayerPerceptronClassifier} (same layers),
 * which aggregates its gradients with {@code treeAggregate}. To see when it reaches a test
 * accuracy, it trains in rounds of a few iterations, each round starting from the previous
 * round's weights ({@code setInitialWeights}), and scores the test set after each round (the
 * scoring time is not counted). L-BFGS restarts its curvature history at each round, which
 * costs it a little; gd is plain full-batch gradient descent, MLlib's other solver.
 */
public final class MllibBaseline {
  /** One solver's figures. */
  public record Outcome(String solver, double secondsToTarget, double secondsPerIteration,
      double finalAccuracy, int iterations, double trainSeconds) {
  }

  private MllibBaseline() {
  }

  public static Outcome run(JavaSparkContext sc, FashionMnist data, int[] layers,
      int partitions, String solver, double target, double budgetSeconds, int itersPerRound,
      double stepSize, PrintStream out) {
    SparkSession spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    Dataset<Row> train = frame(spark, data.trainImages(), data.trainLabels(), data.pixels())
        .repartition(partitions).cache();
    Dataset<Row> test = frame(spark, data.testImages(), data.testLabels(), data.pixels())
        .cache();
    train.count();
    test.count();
    MulticlassClassificationEvaluator eval = new MulticlassClassificationEvaluator()
        .setMetricName("accuracy");
    Vector weights = null;
    double trainSeconds = 0;
    double toTarget = Double.NaN;
    double acc = 0;
    int iterations = 0;
    while (trainSeconds < budgetSeconds) {
      MultilayerPerceptronClassifier c = new MultilayerPerceptronClassifier().setLayers(layers)
          .setBlockSize(128).setSeed(42).setMaxIter(itersPerRound).setSolver(solver)
          .setStepSize(stepSize).setTol(0);
      if (weights != null) {
        c.setInitialWeights(weights);
      }
      long t0 = System.nanoTime();
      MultilayerPerceptronClassificationModel m = c.fit(train);
      trainSeconds += (System.nanoTime() - t0) / 1e9;
      iterations += itersPerRound;
      weights = m.weights();
      acc = eval.evaluate(m.transform(test));
      if (out != null) {
        out.printf("  mllib %-5s %4d iterations  test acc %.4f  %6.1f s%n", solver, iterations,
            acc, trainSeconds);
      }
      if (Double.isNaN(toTarget) && acc >= target) {
        toTarget = trainSeconds;
        break;
      }
    }
    train.unpersist();
    test.unpersist();
    return new Outcome(solver, toTarget, trainSeconds / iterations, acc, iterations,
        trainSeconds);
  }

  private static Dataset<Row> frame(SparkSession spark, byte[] images, byte[] labels,
      int pixels) {
    List<Row> rows = new ArrayList<>(labels.length);
    for (int i = 0; i < labels.length; i++) {
      double[] f = new double[pixels];
      for (int k = 0; k < pixels; k++) {
        f[k] = (images[i * pixels + k] & 0xFF) / 255.0;
      }
      rows.add(RowFactory.create((double) labels[i], Vectors.dense(f)));
    }
    StructType schema = new StructType().add("label", DataTypes.DoubleType)
        .add("features", new VectorUDT());
    return spark.createDataFrame(rows, schema);
  }
}

package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.Treeline;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.spark.TreelinePlugin;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * Four executor JVMs (local-cluster[4,1,1024]) placed on two simulated nodes of two by
 * spark.treeline.test.ranksPerNode=2: shared memory inside each pair, the trees across.
 */
class LocalClusterBarrierStageTest {
  @Test
  void fourExecutorJvmsOnTwoSimulatedNodesAllReduceEveryType() throws Exception {
    long t0 = System.nanoTime();
    // local-cluster from Maven jars alone (VERIFIED.md): spark.testing passes the driver's
    // classpath to the executors, spark.test.home needs an empty jars folder
    Path home = Path.of("target", "spark-test-home");
    Files.createDirectories(home.resolve("jars"));
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", home.toAbsolutePath().toString());
    SparkConf conf = new SparkConf().setMaster("local-cluster[4,1,1024]")
        .setAppName("treeline-local-cluster")
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
        .set("spark.treeline.test.ranksPerNode", "2")
        .set("spark.treeline.timeout", "60s")
        .set("spark.executor.extraJavaOptions", "-Djava.io.tmpdir="
            + Path.of("target", "tmp").toAbsolutePath());
    int n = 65_537;
    List<String> layout;
    List<double[][]> results;
    try (JavaSparkContext jsc = new JavaSparkContext(conf)) {
      List<Object[]> out = BarrierJobs.collect(jsc.parallelize(List.of(0, 1, 2, 3), 4),
          (p, it) -> {
            Communicator c = Treeline.communicator();
            DataType[] types = {DataType.F32, DataType.BF16, DataType.F64, DataType.I64};
            double[][] res = new double[types.length][];
            for (int k = 0; k < types.length; k++) {
              DataType t = types[k];
              ByteBuffer in = ItData.encode(100 + k, c.rank(), n, t);
              ByteBuffer o = ByteBuffer.allocateDirect(n * t.size()).order(in.order());
              c.allReduce(in, o, n, t, ReduceOp.AVG);
              res[k] = ItData.decode(o, n, t);
            }
            String where = "rank " + c.rank() + " node " + c.nodeRank() + "/" + c.nodeCount()
                + " local " + c.localRank() + "/" + c.localSize() + " pid "
                + ProcessHandle.current().pid();
            return java.util.Collections.singletonList(new Object[] {where, res}).iterator();
          });
      layout = out.stream().map(o -> (String) o[0]).toList();
      results = out.stream().map(o -> (double[][]) o[1]).toList();
    } finally {
      System.clearProperty("spark.testing");
    }
    assertEquals(4, results.size());
    assertEquals(4, layout.stream().map(s -> s.substring(s.indexOf("pid"))).distinct().count(),
        "four executor JVMs: " + layout);
    assertTrue(layout.get(0).contains("node 0/2 local 0/2"), layout.toString());
    assertTrue(layout.get(3).contains("node 1/2 local 1/2"), layout.toString());
    DataType[] types = {DataType.F32, DataType.BF16, DataType.F64, DataType.I64};
    for (int k = 0; k < types.length; k++) {
      for (int i = 0; i < n; i++) {
        double ref = ItData.reference(100 + k, 4, i, types[k], ReduceOp.AVG);
        double tol = ItData.tolerance(100 + k, 4, i, types[k]);
        for (int r = 0; r < 4; r++) {
          double got = results.get(r)[k][i];
          assertTrue(Math.abs(got - ref) <= tol, types[k] + " rank " + r + " element " + i
              + ": " + got + " vs " + ref);
        }
      }
    }
    System.out.printf("local-cluster, 4 executor JVMs on 2 simulated nodes %s: %.1f s%n",
        layout, (System.nanoTime() - t0) / 1e9);
  }
}

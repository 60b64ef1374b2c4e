package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.Treeline;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.spark.TreelinePlugin;
import java.io.IOException;
import java.io.Serializable;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * A barrier stage on YARN: a MiniYARNCluster (one ResourceManager, one NodeManager) in the test
 * JVM, a SparkContext in client mode submitting to it, four executors in four YARN containers,
 * placed on two simulated nodes of two by spark.treeline.test.ranksPerNode=2 (shared memory
 * inside each pair, the trees across), as Spark's own BaseYarnClusterSuite sets YARN up
 * (VERIFIED.md, "YARN in tests").
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class YarnClusterBarrierStageTest {
  static final int EXECUTORS = 4;
  static final int N = 65_537; // odd, prime: no rank's slice or chunk divides evenly
  static final DataType[] TYPES = {DataType.F32, DataType.BF16, DataType.F64};
  static final ReduceOp[] OPS = {ReduceOp.AVG, ReduceOp.AVG, ReduceOp.SUM};
  static final String CONTAINER_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1";
  static final Path WORK = Path.of("target", "yarn").toAbsolutePath();

  private static volatile MiniYARNCluster yarn;
  private static volatile JavaSparkContext jsc;
  private static volatile String applicationId;

  /** What each barrier task reports about where it ran, with its results. */
  record TaskReport(int rank, int nodeRank, String containerId, String executorId, long pid,
      long rssKiB, boolean moduleFlags, double setupSeconds, double allReduceSeconds,
      double[][] results) implements Serializable {
  }

  @BeforeAll
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  static void startYarnAndSubmit() throws Exception {
    long t0 = System.nanoTime();
    Files.createDirectories(WORK);
    // the AM and each executor (512m heap + 384m overhead) take a 1 GiB container
    yarn = MiniYarn.start(YarnClusterBarrierStageTest.class.getSimpleName(), WORK, 1, 8192,
        20_000);
    double clusterUp = (System.nanoTime() - t0) / 1e9;

    // no Spark distribution: the containers get Spark and Treeline from the test classpath,
    // and spark.yarn.jars points at an empty jar so that nothing is uploaded
    Path emptyJar = WORK.resolve("empty-spark-jars.jar");
    new JarOutputStream(Files.newOutputStream(emptyJar), new Manifest()).close();
    String classpath = System.getProperty("java.class.path");
    SparkConf conf = new SparkConf().setMaster("yarn").setAppName("treeline-yarn")
        .set("spark.submit.deployMode", "client")
        .set("spark.yarn.jars", "local:" + emptyJar)
        .set("spark.yarn.stagingDir", WORK.resolve("staging").toString())
        .set("spark.yarn.maxAppAttempts", "1")
        .set("spark.driver.extraClassPath", classpath)
        .set("spark.executor.extraClassPath", classpath)
        // SparkContext adds Spark's --add-opens flags (Kryo, Netty) to the executors' options
        // (each task checks) and the YARN client to the AM's. Five JVMs start at once on a
        // 2-core machine: C1 only and a serial GC start them sooner, and the stage is small
        .set("spark.executor.extraJavaOptions", CONTAINER_JVM_OPTIONS)
        .set("spark.yarn.am.extraJavaOptions", CONTAINER_JVM_OPTIONS)
        .set("spark.executor.instances", Integer.toString(EXECUTORS))
        .set("spark.executor.cores", "1")
        .set("spark.executor.memory", "512m")
        .set("spark.yarn.am.memory", "512m")
        .set("spark.dynamicAllocation.enabled", "false")
        // the barrier stage needs every executor: wait for all of them at start-up
        .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
        .set("spark.ui.enabled", "false")
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.treeline.test.ranksPerNode", "2")
        .set("spark.treeline.timeout", "60s");
    for (Map.Entry<String, String> e : yarn.getConfig()) {
      conf.set("spark.hadoop." + e.getKey(), e.getValue());
    }
    long t1 = System.nanoTime();
    try {
      jsc = new JavaSparkContext(conf);
    } catch (Exception e) { // SparkException is checked, and thrown undeclared from Scala
      throw new AssertionError("the SparkContext did not start on YARN; the containers' logs "
          + "end with:\n" + containerLogTails(), e);
    }
    applicationId = jsc.sc().applicationId();
    System.out.printf("MiniYARNCluster up in %.1f s; SparkContext on YARN (%s, %d executors "
        + "registered) in %.1f s%n", clusterUp, applicationId,
        jsc.sc().getExecutorIds().size(), (System.nanoTime() - t1) / 1e9);
  }

  @AfterAll
  static void stopSparkAndYarn() {
    try {
      if (jsc != null) {
        jsc.stop();
      }
    } finally {
      MiniYarn.stop(yarn);
    }
  }

  @Test
  @Order(1)
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aBarrierStageInFourYarnContainersAllReducesToTheFloat64ReferenceComputedOnTheDriver() {
    long t0 = System.nanoTime();
    List<TaskReport> reports;
    try {
      reports = BarrierJobs.collect(jsc.parallelize(List.of(0, 1, 2, 3), EXECUTORS),
          (p, it) -> {
            long s0 = System.nanoTime();
            Communicator c = Treeline.communicator();
            long s1 = System.nanoTime();
            ByteBuffer[] in = new ByteBuffer[TYPES.length];
            ByteBuffer[] out = new ByteBuffer[TYPES.length];
            for (int k = 0; k < TYPES.length; k++) {
              in[k] = ItData.encode(300 + k, c.rank(), N, TYPES[k]);
              out[k] = ByteBuffer.allocateDirect(N * TYPES[k].size()).order(in[k].order());
            }
            long s2 = System.nanoTime();
            for (int k = 0; k < TYPES.length; k++) {
              c.allReduce(in[k], out[k], N, TYPES[k], OPS[k]);
            }
            long s3 = System.nanoTime();
            double[][] res = new double[TYPES.length][];
            for (int k = 0; k < TYPES.length; k++) {
              res[k] = ItData.decode(out[k], N, TYPES[k]);
            }
            boolean flags = ManagementFactory.getRuntimeMXBean().getInputArguments()
                .contains("--add-opens=java.base/java.nio=ALL-UNNAMED");
            return Collections.singletonList(new TaskReport(c.rank(), c.nodeRank(),
                System.getenv("CONTAINER_ID"), SparkEnv.get().executorId(),
                ProcessHandle.current().pid(), rssKiB(ProcessHandle.current().pid()), flags,
                (s1 - s0) / 1e9, (s3 - s2) / 1e9, res)).iterator();
          });
    } catch (Exception e) { // SparkException is checked, and thrown undeclared from Scala
      throw new AssertionError("the barrier stage failed; the containers' logs end with:\n"
          + containerLogTails(), e);
    }
    double stage = (System.nanoTime() - t0) / 1e9;

    assertEquals(EXECUTORS, reports.size());
    String layout = reports.stream().map(r -> "rank " + r.rank() + " node " + r.nodeRank()
        + " executor " + r.executorId() + " " + r.containerId()).collect(
            Collectors.joining("; "));
    ApplicationId app = ApplicationId.fromString(applicationId);
    for (TaskReport r : reports) {
      assertNotNull(r.containerId(), "rank " + r.rank() + " ran outside a YARN container");
      ContainerId id = ContainerId.fromString(r.containerId());
      assertEquals(app, id.getApplicationAttemptId().getApplicationId(),
          "rank " + r.rank() + " ran in a container of another application: " + layout);
      assertTrue(r.moduleFlags(), "executor " + r.executorId() + " lacks Spark's --add-opens");
    }
    assertEquals(EXECUTORS, reports.stream().map(TaskReport::containerId).distinct().count(),
        "one container per rank: " + layout);
    assertEquals(EXECUTORS, reports.stream().map(TaskReport::executorId).distinct().count(),
        "one executor per rank: " + layout);
    assertEquals(EXECUTORS, reports.stream().map(TaskReport::pid).distinct().count(),
        "one JVM per rank: " + layout);
    assertEquals(List.of(0, 0, 1, 1), reports.stream().map(TaskReport::nodeRank).toList(),
        "two simulated nodes of two: " + layout);
    for (int k = 0; k < TYPES.length; k++) {
      for (int i = 0; i < N; i++) {
        double ref = ItData.reference(300 + k, EXECUTORS, i, TYPES[k], OPS[k]);
        double tol = ItData.tolerance(300 + k, EXECUTORS, i, TYPES[k]);
        for (TaskReport r : reports) {
          double got = r.results()[k][i];
          assertTrue(Math.abs(got - ref) <= tol, TYPES[k] + " " + OPS[k] + " rank " + r.rank()
              + " element " + i + ": " + got + " vs " + ref);
        }
      }
    }
    long rss = ProcessHandle.current().descendants().mapToLong(h -> rssKiB(h.pid())).sum()
        + rssKiB(ProcessHandle.current().pid());
    System.out.printf("YARN, %d executor containers on 2 simulated nodes [%s]: barrier stage "
        + "%.1f s (communicator set-up %.2f s, 3 allreduces of %d elements %.2f s, slowest "
        + "rank); RSS executors %s MiB, test JVM and every container %d MiB%n", EXECUTORS,
        layout, stage, reports.stream().mapToDouble(TaskReport::setupSeconds).max().orElse(0),
        N, reports.stream().mapToDouble(TaskReport::allReduceSeconds).max().orElse(0),
        reports.stream().map(r -> Long.toString(r.rssKiB() >> 10)).toList(), rss >> 10);
  }

  @Test
  @Order(2)
  @Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void stoppingTheContextFinishesTheApplicationAndReleasesEveryContainer() throws Exception {
    long t0 = System.nanoTime();
    jsc.stop();
    RMApp app = yarn.getResourceManager().getRMContext().getRMApps()
        .get(ApplicationId.fromString(applicationId));
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while ((app.getState() != RMAppState.FINISHED || allocatedContainers() > 0)
        && System.nanoTime() < until) {
      Thread.sleep(100);
    }
    assertEquals(RMAppState.FINISHED, app.getState(), app.getDiagnostics().toString());
    assertEquals(FinalApplicationStatus.SUCCEEDED, app.getFinalApplicationStatus());
    assertEquals(0, allocatedContainers(), "containers still allocated after the stop");
    System.out.printf("application %s %s, every container released, %.1f s after the stop%n",
        applicationId, app.getFinalApplicationStatus(), (System.nanoTime() - t0) / 1e9);
  }

  private static int allocatedContainers() {
    return yarn.getResourceManager().getResourceScheduler().getRootQueueMetrics()
        .getAllocatedContainers();
  }

  /** Resident memory of a process from /proc, 0 where it cannot be read (it ended). */
  static long rssKiB(long pid) {
    try (Stream<String> lines = Files.lines(Path.of("/proc", Long.toString(pid), "status"))) {
      return lines.filter(l -> l.startsWith("VmRSS:"))
          .mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", ""))).findFirst().orElse(0);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /** The last lines of every container's stderr, for a failure message. */
  private static String containerLogTails() {
    Path logs = yarn.getTestWorkDir().toPath();
    List<String> out = new ArrayList<>();
    try (Stream<Path> s = Files.walk(logs)) {
      for (Path p : s.filter(f -> f.getFileName().toString().equals("stderr")).sorted()
          .toList()) {
        List<String> lines = Files.readAllLines(p);
        out.add("== " + p.getParent().getFileName());
        out.addAll(lines.subList(Math.max(0, lines.size() - 30), lines.size()));
      }
    } catch (IOException | RuntimeException e) {
      out.add("(cannot read " + logs + ": " + e + ")");
    }
    return String.join("\n", out);
  }
}

package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * spark-submit to YARN as a user runs it, client and cluster mode, against a MiniYARNCluster of
 * one ResourceManager and three NodeManagers in the test JVM, set up as Spark's
 * BaseYarnClusterSuite does it: the cluster's configuration written as yarn-site.xml into a
 * directory named by YARN_CONF_DIR and put first on the submitter's classpath (what
 * bin/spark-class does), Spark's jars from the local classpath (spark.yarn.jars points at an
 * empty jar), Treeline only from the shaded jar in --jars, the job from its application jar.
 *
 * <p>Every container takes 1 GiB (512 MiB and YARN's 384 MiB overhead, rounded up to the 1 GiB
 * minimum allocation): the AM (the driver in cluster mode) and two executors. Each NodeManager
 * offers 1.5 GiB, so it holds one container and the three land on three NodeManagers: the two
 * ranks always run on two nodes. (With two NodeManagers of 2 GiB, as before, the scheduler could
 * put both executors on the one without the AM, and did in a CI run.) The final status is read
 * from the ResourceManager with a YarnClient.
 */
class SparkSubmitYarnTest {
  static final Path WORK = SparkSubmitRunner.WORK.resolve("yarn");
  static final String JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1";

  private static MiniYARNCluster yarn;
  private static Path confDir;
  private static Path emptyJar;

  @BeforeAll
  @Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  static void startYarn() throws Exception {
    long t0 = System.nanoTime();
    Files.createDirectories(WORK);
    yarn = MiniYarn.start(SparkSubmitYarnTest.class.getSimpleName(), WORK, 3, 1536, 30_000);
    confDir = Files.createDirectories(WORK.resolve("hadoop-conf"));
    try (OutputStream out = Files.newOutputStream(confDir.resolve("yarn-site.xml"))) {
      yarn.getConfig().writeXml(out);
    }
    emptyJar = WORK.resolve("empty-spark-jars.jar");
    new JarOutputStream(Files.newOutputStream(emptyJar), new Manifest()).close();
    System.out.printf("MiniYARNCluster with 3 NodeManagers up in %.1f s%n",
        (System.nanoTime() - t0) / 1e9);
  }

  @AfterAll
  static void stopYarn() {
    MiniYarn.stop(yarn);
  }

  @Test
  @Timeout(value = 4, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void clientModeTrainsOnExecutorsOfTwoNodeManagersAndTheApplicationSucceeds()
      throws Exception {
    submitAndCheck("client");
  }

  @Test
  @Timeout(value = 4, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void clusterModeTrainsWithTheDriverInTheApplicationMasterAndTheApplicationSucceeds()
      throws Exception {
    submitAndCheck("cluster");
  }

  private static void submitAndCheck(String mode) throws Exception {
    Path dir = WORK.resolve(mode);
    Files.createDirectories(dir);
    Path out = dir.resolve("result.txt");
    Files.deleteIfExists(out);
    String sparkCp = SparkSubmitRunner.sparkClasspath();
    String name = "treeline-train-" + mode;
    List<String> args = new ArrayList<>(List.of(
        "--master", "yarn", "--deploy-mode", mode, "--name", name,
        "--num-executors", "2", "--executor-cores", "1", "--executor-memory", "512m",
        "--driver-memory", "512m",
        "--jars", SparkSubmitRunner.shadedJar().toString(),
        "--conf", "spark.plugins=io.treeline.spark.TreelinePlugin",
        "--conf", "spark.dynamicAllocation.enabled=false",
        "--conf", "spark.treeline.timeout=60s",
        "--conf", "spark.treeline.bucketBytes=4k",
        // one simulated node per rank, as the two NodeManagers are two nodes (TCP across)
        "--conf", "spark.treeline.test.ranksPerNode=1",
        // no Spark distribution: Spark's jars from the local classpath (BaseYarnClusterSuite)
        "--conf", "spark.yarn.jars=local:" + emptyJar,
        "--conf", "spark.driver.extraClassPath=" + sparkCp,
        "--conf", "spark.executor.extraClassPath=" + sparkCp,
        "--conf", "spark.yarn.stagingDir=" + dir.resolve("staging"),
        "--conf", "spark.yarn.maxAppAttempts=1",
        "--conf", "spark.yarn.am.memory=512m",
        // the AM's options: spark.yarn.am.* in client mode, the driver's in cluster mode
        "--conf", (mode.equals("client") ? "spark.yarn.am" : "spark.driver")
            + ".extraJavaOptions=" + JVM_OPTIONS,
        "--conf", "spark.executor.extraJavaOptions=" + JVM_OPTIONS,
        "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "--conf", "spark.scheduler.barrier.maxConcurrentTasksCheck.interval=1s",
        "--conf", "spark.ui.enabled=false",
        "--class", "io.treeline.it.app.TrainApp", SparkSubmitRunner.appJar().toString(),
        "--ranks", "2", "--steps", "60", "--out", out.toString()));
    SparkSubmitRunner.Result r = SparkSubmitRunner.run(args, List.of(),
        List.of(confDir.toString()), Map.of("YARN_CONF_DIR", confDir.toString()), dir,
        Duration.ofMinutes(3));
    String diag = r.commandLine() + "\nexited " + r.exitCode() + ":\n" + r.tail(60)
        + "\ncontainers' logs end with:\n" + containerLogTails();
    assertEquals(0, r.exitCode(), diag);
    assertTrue(Files.exists(out), "no result file; " + diag);
    String line = Files.readString(out).trim();
    Map<String, String> f = SparkSubmitRunner.fields(line);
    ApplicationId app = ApplicationId.fromString(f.get("app"));
    ApplicationReport report = finalReport(app);
    assertEquals(name, report.getName());
    assertEquals(YarnApplicationState.FINISHED, report.getYarnApplicationState(),
        report.getDiagnostics());
    assertEquals(FinalApplicationStatus.SUCCEEDED, report.getFinalApplicationStatus(),
        report.getDiagnostics());
    assertEquals("yarn", f.get("master"));
    assertEquals("2", f.get("ranks"));
    assertEquals("true", f.get("identical"), line);
    assertTrue(Double.parseDouble(f.get("maxDiffFromSequential")) <= 1e-4, line);
    assertTrue(Double.parseDouble(f.get("accuracy")) > 0.9, line);
    String[] executors = f.get("executors").split(",");
    for (String e : executors) {
      assertTrue(e.contains("/container_"), "rank outside a YARN container: " + line);
      assertTrue(e.contains(app.toString().replace("application_", "")), "a container of "
          + "another application: " + line);
    }
    assertEquals(2, Arrays.stream(executors).map(e -> e.replaceAll(".*/nm", "")).distinct()
        .count(), "the two ranks on two NodeManagers: " + line);
    if (mode.equals("client")) {
      assertEquals(line, r.resultLine(), "the driver (the submitter) printed the result");
    } else {
      assertTrue(amStdout(app).contains(line), "the driver in the AM container printed "
          + "the result");
    }
    System.out.printf("%s%n  -> exit 0 in %.1f s; %s %s %s: %s%n", r.commandLine(),
        r.seconds(), app, report.getYarnApplicationState(),
        report.getFinalApplicationStatus(), line);
  }

  /** The application's report once the RM has it in a final state. */
  private static ApplicationReport finalReport(ApplicationId app) throws Exception {
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarn.getConfig());
      client.start();
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (true) {
        ApplicationReport r = client.getApplicationReport(app);
        YarnApplicationState s = r.getYarnApplicationState();
        if (s == YarnApplicationState.FINISHED || s == YarnApplicationState.FAILED
            || s == YarnApplicationState.KILLED || System.nanoTime() > until) {
          return r;
        }
        Thread.sleep(200);
      }
    }
  }

  /** The stdout of the application's first container (the AM: in cluster mode the driver). */
  private static String amStdout(ApplicationId app) throws IOException {
    String first = "container_" + app.toString().replace("application_", "") + "_01_000001";
    try (Stream<Path> s = Files.walk(yarn.getTestWorkDir().toPath())) {
      List<Path> files = s.filter(p -> p.getFileName().toString().equals("stdout")
          && p.getParent().getFileName().toString().endsWith(first.substring(10))).toList();
      StringBuilder b = new StringBuilder();
      for (Path p : files) {
        b.append(Files.readString(p));
      }
      return b.toString();
    }
  }

  private static String containerLogTails() {
    List<String> out = new ArrayList<>();
    try (Stream<Path> s = Files.walk(yarn.getTestWorkDir().toPath())) {
      for (Path p : s.filter(f -> f.getFileName().toString().equals("stderr")).sorted()
          .toList()) {
        List<String> lines = Files.readAllLines(p);
        out.add("== " + p.getParent().getFileName());
        out.addAll(lines.subList(Math.max(0, lines.size() - 20), lines.size()));
      }
    } catch (IOException | RuntimeException e) {
      out.add("(cannot read the logs: " + e + ")");
    }
    return String.join("\n", out);
  }
}

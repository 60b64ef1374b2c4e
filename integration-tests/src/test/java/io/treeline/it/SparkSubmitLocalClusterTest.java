package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * spark-submit as a user runs it, on local-cluster[2,1,1024] (a standalone master and two
 * workers in the driver, an executor JVM each): the shaded jar in --jars, the application jar
 * built from io.treeline.it.app, the plugin by spark.plugins. The training job checks its
 * replicas and a sequential reference; the test checks its result line and exit status.
 */
class SparkSubmitLocalClusterTest {
  static final Path HOME = SparkSubmitRunner.WORK.resolve("spark-home");

  /** What local-cluster needs from Maven jars alone (VERIFIED.md), as -D of the submitter. */
  static List<String> localClusterProps() throws Exception {
    Files.createDirectories(HOME.resolve("jars"));
    return List.of("-Dspark.testing=true", "-Dspark.test.home=" + HOME);
  }

  static List<String> commonArgs(Path dir) throws Exception {
    return new ArrayList<>(List.of(
        "--master", "local-cluster[2,1,1024]",
        "--jars", SparkSubmitRunner.shadedJar().toString(),
        "--conf", "spark.plugins=io.treeline.spark.TreelinePlugin",
        "--conf", "spark.executorEnv.SPARK_SCALA_VERSION=2.13",
        "--conf", "spark.scheduler.barrier.maxConcurrentTasksCheck.interval=1s",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.treeline.timeout=60s",
        "--conf", "spark.treeline.bucketBytes=4k",
        "--conf", "spark.executor.extraJavaOptions=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
            + "-Djava.io.tmpdir=" + Files.createDirectories(dir.resolve("tmp"))));
  }

  @Test
  void theTrainingJobSubmittedWithTheShadedJarRunsOnTwoExecutorJvmsWithIdenticalReplicas()
      throws Exception {
    Path dir = SparkSubmitRunner.WORK.resolve("local-cluster");
    Path out = dir.resolve("result.txt");
    List<String> args = commonArgs(dir);
    args.addAll(List.of("--class", "io.treeline.it.app.TrainApp",
        SparkSubmitRunner.appJar().toString(), "--ranks", "2", "--steps", "60",
        "--out", out.toString()));
    SparkSubmitRunner.Result r = SparkSubmitRunner.run(args, localClusterProps(), List.of(),
        Map.of(), dir, Duration.ofMinutes(3));
    assertEquals(0, r.exitCode(), r.commandLine() + "\nexited " + r.exitCode() + ":\n"
        + r.tail(80));
    String line = r.resultLine();
    assertNotNull(line, "no TREELINE-RESULT line in the output:\n" + r.tail(80));
    assertEquals(line, Files.readString(out).trim());
    Map<String, String> f = SparkSubmitRunner.fields(line);
    assertEquals("local-cluster[2,1,1024]", f.get("master"));
    assertEquals("2", f.get("ranks"));
    assertEquals("true", f.get("identical"));
    assertTrue(Double.parseDouble(f.get("maxDiffFromSequential")) <= 1e-4, line);
    assertTrue(Double.parseDouble(f.get("accuracy")) > 0.9, line);
    assertEquals(2, distinctPids(f.get("executors")), "two executor JVMs: " + line);
    System.out.printf("%s%n  -> exit 0 in %.1f s: %s%n", r.commandLine(), r.seconds(), line);
  }

  @Test
  void aRelativeClasspathIsRefusedAtStartUpNamingTheEntriesInsteadOfASerializedLambdaError()
      throws Exception {
    // what a user did: Treeline and the job on the submitter's classpath by relative paths,
    // which local-cluster (with spark.testing) hands to executors that start elsewhere
    Path dir = SparkSubmitRunner.WORK.resolve("relative-classpath");
    Files.createDirectories(dir.resolve("lib"));
    Files.copy(SparkSubmitRunner.shadedJar(), dir.resolve("lib/treeline-spark.jar"),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    Files.copy(SparkSubmitRunner.appJar(), dir.resolve("lib/train-app.jar"),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    List<String> args = commonArgs(dir);
    int jars = args.indexOf("--jars");
    args.subList(jars, jars + 2).clear();
    args.addAll(List.of("--class", "io.treeline.it.app.TrainApp", "spark-internal",
        "--ranks", "2", "--steps", "5"));
    SparkSubmitRunner.Result r = SparkSubmitRunner.run(args, localClusterProps(),
        List.of("lib/treeline-spark.jar", "lib/train-app.jar"), Map.of(), dir,
        Duration.ofMinutes(2));
    assertTrue(r.exitCode() != 0, "a relative classpath ran:\n" + r.tail(40));
    assertTrue(r.output().contains("Treeline cannot run with this Spark configuration"),
        r.tail(60));
    assertTrue(r.output().contains("relative classpath entries [lib/treeline-spark.jar, "
        + "lib/train-app.jar]"), r.tail(60));
    assertTrue(r.output().contains("give absolute paths"), r.tail(60));
    System.out.printf("%s (classpath lib/treeline-spark.jar:lib/train-app.jar:SPARK)%n  -> exit "
        + "%d in %.1f s: %s%n", r.commandLine(), r.exitCode(), r.seconds(), r.output().lines()
        .filter(l -> l.contains("relative classpath entries")).findFirst().orElse("").trim());
  }

  /** How many distinct JVMs an "executors" field (id/pidN@host,...) names. */
  static long distinctPids(String executors) {
    return java.util.Arrays.stream(executors.split(",")).map(e -> e.replaceAll(".*/pid", ""))
        .distinct().count();
  }
}

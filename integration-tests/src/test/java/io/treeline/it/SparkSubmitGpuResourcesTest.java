package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * GPUs through Spark's resource scheduling on a machine without one: the discovery script that
 * the shaded jar ships, run against a stand-in nvidia-smi, and the training job submitted to
 * local-cluster[2,1,1024] with spark.{worker,executor,task}.resource.gpu.* and a stand-in
 * discovery script that hands each worker one fake GPU. The executors see the stand-in
 * nvidia-smi (two GPUs with UUIDs), so Treeline binds each task's address to a UUID; a
 * discovery script printing an address nvidia-smi does not list makes every executor refuse
 * to start, and the driver say why.
 *
 * <p>Here the workers own the GPUs (spark.worker.resource.gpu.*, as a standalone cluster's
 * do) and hand each executor one through a resources file.
 */
class SparkSubmitGpuResourcesTest {
  static final String U0 = "GPU-11111111-2222-3333-4444-555555555555";
  static final String U1 = "GPU-66666666-7777-8888-9999-000000000000";
  static final Path DIR = SparkSubmitRunner.WORK.resolve("gpu");
  private static Path fakeBin;
  private static Path script;

  @BeforeAll
  static void standIns() throws Exception {
    Files.createDirectories(DIR);
    // nvidia-smi as this node's would answer the queries Treeline makes; anything else
    // (topo -m, the topology report's query) fails, as it would on a driverless node
    fakeBin = Files.createDirectories(DIR.resolve("fake-bin"));
    executable(fakeBin.resolve("nvidia-smi"), "#!/bin/sh\n"
        + "if [ \"$*\" = \"--query-gpu=index,uuid --format=csv,noheader\" ]; then\n"
        + "  echo '0, " + U0 + "'\n  echo '1, " + U1 + "'\n  exit 0\nfi\n"
        + "echo 'stand-in nvidia-smi: unsupported arguments' >&2\nexit 9\n");
    // the script as a jar user gets it: out of the shaded jar
    script = DIR.resolve("getGpusResources.sh");
    try (JarFile j = new JarFile(SparkSubmitRunner.shadedJar().toFile())) {
      var e = j.getJarEntry("io/treeline/spark/getGpusResources.sh");
      assertNotNull(e, "the shaded jar lacks io/treeline/spark/getGpusResources.sh");
      executable(script, new String(j.getInputStream(e).readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  static void executable(Path p, String text) throws Exception {
    Files.writeString(p, text);
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** Runs the discovery script with {@code path} as PATH; exit code and stdout + stderr. */
  static String[] discover(String path, Map<String, String> env) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(script.toString()).redirectErrorStream(true);
    pb.environment().put("PATH", path);
    pb.environment().remove("CUDA_VISIBLE_DEVICES");
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(p.waitFor(20, TimeUnit.SECONDS), "the discovery script hung");
    return new String[] {Integer.toString(p.exitValue()), out};
  }

  @Test
  void theShippedDiscoveryScriptPrintsSparksJsonAndFailsClearlyWithoutNvidiaSmi()
      throws Exception {
    String path = fakeBin + ":/usr/bin:/bin";
    assertEquals(List.of("0", "{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}"),
        List.of(discover(path, Map.of())));
    assertEquals(List.of("0", "{\"name\":\"gpu\",\"addresses\":[\"" + U1 + "\"]}"),
        List.of(discover(path, Map.of("TREELINE_GPU_ADDRESSES", "uuid",
            "CUDA_VISIBLE_DEVICES", "1"))));
    String[] none = discover("/usr/bin:/bin", Map.of());
    assertTrue(!none[0].equals("0"), "exit 0 without nvidia-smi: " + none[1]);
    assertTrue(none[1].contains("nvidia-smi is not on the PATH"), none[1]);
    assertTrue(!none[1].contains("{"), "printed JSON without nvidia-smi: " + none[1]);
    System.out.printf("getGpusResources.sh: %s; without nvidia-smi: exit %s, %s%n",
        discover(path, Map.of())[1], none[0], none[1]);
  }

  /** spark-submit arguments for GPU scheduling with {@code workerScript} as discovery. */
  static List<String> gpuArgs(Path dir, Path workerScript) throws Exception {
    List<String> args = SparkSubmitLocalClusterTest.commonArgs(dir);
    args.addAll(List.of(
        // standalone: the workers own the node's GPUs and hand one to each executor
        "--conf", "spark.worker.resource.gpu.amount=1",
        "--conf", "spark.worker.resource.gpu.discoveryScript=" + workerScript,
        "--conf", "spark.executor.resource.gpu.amount=1",
        "--conf", "spark.executor.resource.gpu.discoveryScript=" + script,
        "--conf", "spark.task.resource.gpu.amount=1",
        "--conf", "spark.executorEnv.PATH=" + fakeBin + ":" + System.getenv("PATH")));
    return args;
  }

  @Test
  void eachTaskIsBoundToTheFakeGpuItsWorkerWasGivenByNvidiaSmiIndexAndUuid() throws Exception {
    Assumptions.assumeFalse(io.treeline.kernels.GpuDevices.list().available(),
        "a real GPU is here: the fake UUIDs would not be visible to CUDA");
    Path dir = DIR.resolve("bound");
    Path claims = Files.createDirectories(dir.resolve("claims"));
    try (var s = Files.list(claims)) {
      for (Path p : s.toList()) {
        Files.delete(p);
      }
    }
    // each worker of local-cluster runs the discovery script; this one hands out a fake GPU
    // per call, as two nodes' scripts would each find their own
    Path perWorker = dir.resolve("claim-one-gpu.sh");
    executable(perWorker, "#!/bin/sh\nfor a in 0 1; do\n"
        + "  if mkdir '" + claims + "'/$a 2>/dev/null; then\n"
        + "    echo '{\"name\":\"gpu\",\"addresses\":[\"'$a'\"]}'; exit 0\n  fi\ndone\n"
        + "echo 'no fake GPU left' >&2\nexit 1\n");
    Path out = dir.resolve("result.txt");
    List<String> args = gpuArgs(dir, perWorker);
    args.addAll(List.of("--class", "io.treeline.it.app.TrainApp",
        SparkSubmitRunner.appJar().toString(), "--ranks", "2", "--steps", "20",
        "--out", out.toString()));
    SparkSubmitRunner.Result r = SparkSubmitRunner.run(args,
        SparkSubmitLocalClusterTest.localClusterProps(), List.of(), Map.of(), dir,
        Duration.ofMinutes(3));
    assertEquals(0, r.exitCode(), r.commandLine() + "\nexited " + r.exitCode() + ":\n"
        + r.tail(80));
    String line = r.resultLine();
    assertNotNull(line, r.tail(60));
    Map<String, String> f = SparkSubmitRunner.fields(line);
    assertEquals("true", f.get("identical"), line);
    // address/nvidia-smi index/UUID/CUDA ordinal (-1: no CUDA driver here)
    Set<String> gpus = Set.of(f.get("gpus").split(","));
    assertEquals(Set.of("0/0/" + U0 + "/-1", "1/1/" + U1 + "/-1"), gpus, line);
    System.out.printf("%s%n  -> exit 0 in %.1f s: %s%n", r.commandLine(), r.seconds(), line);
  }

  @Test
  void aGpuAddressNvidiaSmiDoesNotListIsRefusedAndTheDriverSaysWhy() throws Exception {
    Path dir = DIR.resolve("mismatch");
    Path wrong = dir.resolve("wrong-gpu.sh");
    Files.createDirectories(dir);
    executable(wrong, "#!/bin/sh\necho '{\"name\":\"gpu\",\"addresses\":[\"5\"]}'\n");
    List<String> args = gpuArgs(dir, wrong);
    // a standalone master relaunches the refused executors as long as another one is
    // starting (YARN ends the application after spark.executor.maxNumFailures): the test
    // ends the run once the driver has said why
    args.addAll(List.of("--class", "io.treeline.it.app.TrainApp", SparkSubmitRunner.appJar().toString(),
        "--ranks", "2", "--steps", "5"));
    SparkSubmitRunner.Result r = SparkSubmitRunner.run(args,
        SparkSubmitLocalClusterTest.localClusterProps(), List.of(), Map.of(), dir,
        Duration.ofMinutes(2), "refuses its GPU");
    assertTrue(r.resultLine() == null, "trained with a GPU address nvidia-smi does not list:\n"
        + r.tail(40));
    List<String> said = r.output().lines().filter(l -> l.contains("refuses its GPU"))
        .collect(Collectors.toCollection(ArrayList::new));
    assertTrue(!said.isEmpty(), "the driver does not say why:\n" + r.tail(60));
    assertTrue(said.get(0).contains("Spark assigned GPU address 5, but nvidia-smi on this "
        + "executor lists 0 (" + U0 + "), 1 (" + U1 + ")"), said.get(0));
    assertTrue(said.get(0).contains("ERROR"), "logged by the driver: " + said.get(0));
    System.out.printf("%s%n  -> the driver logged after %.1f s: %s%n", r.commandLine(),
        r.seconds(), said.get(0).trim());
  }
}

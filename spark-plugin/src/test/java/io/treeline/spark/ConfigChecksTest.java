package io.treeline.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigChecksTest {
  @Test
  void aGoodClusterConfigurationPasses() {
    assertEquals(List.of(), ConfigChecks.problems(Map.of("spark.master", "yarn",
        "spark.executor.cores", "4", "spark.task.cpus", "4",
        "spark.executor.resource.gpu.amount", "1", "spark.task.resource.gpu.amount", "1")));
  }

  @Test
  void everyProblemIsListedWithWhatToChange() {
    List<String> p = ConfigChecks.problems(Map.of("spark.master", "yarn",
        "spark.dynamicAllocation.enabled", "true", "spark.executor.cores", "8",
        "spark.executor.resource.gpu.amount", "2", "spark.treeline.timout", "1s"));
    assertEquals(5, p.size(), String.join("\n", p));
    assertTrue(p.get(0).contains("set spark.dynamicAllocation.enabled=false"), p.get(0));
    assertTrue(p.get(1).contains("set spark.task.cpus=8"), p.get(1));
    assertTrue(p.get(2).contains("gpu.amount=2"), p.get(2));
    assertTrue(p.get(3).contains("spark.task.resource.gpu.amount=1"), p.get(3));
    assertTrue(p.get(4).contains("did you mean spark.treeline.timeout"), p.get(4));
  }

  @Test
  void localModeRunsAllTasksInOneExecutorAndThatIsFine() {
    assertEquals(List.of(), ConfigChecks.problems(Map.of("spark.master", "local[4]",
        "spark.executor.cores", "4")));
  }

  @Test
  void relativeClasspathEntriesOnLocalClusterAreRefusedNamingThem() {
    List<String> p = ConfigChecks.problems(Map.of("spark.master", "local-cluster[2,1,1024]",
        "spark.executor.extraClassPath", "/abs/x.jar:rel/y.jar"),
        "lib/treeline.jar:/opt/spark/jars/*:{{PWD}}/x.jar", true);
    assertEquals(1, p.size(), String.join("\n", p));
    assertTrue(p.get(0).contains("[lib/treeline.jar, rel/y.jar]"), p.get(0));
    assertTrue(p.get(0).contains("SerializedLambda"), p.get(0));
    assertTrue(p.get(0).contains("absolute paths"), p.get(0));
    // without spark.testing local-cluster's executors do not get the driver's classpath
    assertEquals(List.of(), ConfigChecks.problems(Map.of("spark.master",
        "local-cluster[2,1,1024]"), "lib/treeline.jar", false));
    // YARN localizes files into the container's directory: relative entries are right there
    assertEquals(List.of(), ConfigChecks.problems(Map.of("spark.master", "yarn",
        "spark.executor.extraClassPath", "__app__.jar:lib/x.jar"), "lib/treeline.jar", true));
  }
}

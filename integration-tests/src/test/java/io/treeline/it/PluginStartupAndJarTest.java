package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.spark.TreelinePlugin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

class PluginStartupAndJarTest {
  @Test
  void theDriverRefusesDynamicAllocationSayingWhatToChange() {
    SparkConf conf = new SparkConf().setMaster("local[2]").setAppName("treeline-dynalloc")
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.dynamicAllocation.enabled", "true")
        .set("spark.dynamicAllocation.shuffleTracking.enabled", "true");
    Exception e = assertThrows(Exception.class, () -> new JavaSparkContext(conf).stop());
    Throwable root = e;
    while (root.getCause() != null && !(root instanceof IllegalArgumentException)) {
      root = root.getCause();
    }
    String m = root.getMessage();
    assertTrue(m.contains("Treeline cannot run with this Spark configuration"), m);
    assertTrue(m.contains("set spark.dynamicAllocation.enabled=false"), m);
  }

  @Test
  void theShadedJarHoldsTreelineAndNotWhatTheClusterProvides() throws Exception {
    Path jar = Path.of(System.getProperty("treeline.it.shadedJar"));
    assertTrue(Files.exists(jar), jar + " is built by the spark-plugin module's package phase");
    try (JarFile j = new JarFile(jar.toFile())) {
      List<String> names = j.stream().map(e -> e.getName()).toList();
      for (String must : List.of("io/treeline/spark/TreelinePlugin.class",
          "io/treeline/barrier/Treeline.class", "io/treeline/barrier/GradientAggregator.class",
          "io/treeline/comm/HostCommunicator.class", "io/treeline/core/Communicator.class",
          "io/treeline/plan/DoubleBinaryTree.class", "META-INF/treeline/configuration.md")) {
        assertTrue(names.contains(must), "missing " + must);
      }
      for (String prefix : List.of("org/apache/spark/", "scala/", "com/esotericsoftware/",
          "org/apache/hadoop/", "org/junit/")) {
        assertTrue(names.stream().noneMatch(n -> n.startsWith(prefix)), "the jar bundles "
            + prefix + " which the cluster provides");
      }
    }
  }
}

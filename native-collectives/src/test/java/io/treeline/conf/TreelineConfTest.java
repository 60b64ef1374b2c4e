package io.treeline.conf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.plan.Algorithm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TreelineConfTest {

  @Test
  void theCommittedDocsAreWhatTheDeclarationsGenerate() throws Exception {
    // the module runs with its own folder as working directory; the docs are at the root
    Path docs = Path.of("..", "docs", "configuration.md");
    assertTrue(Files.exists(docs), "docs/configuration.md is missing: run ./mvnw -q -Pdocs "
        + "-pl native-collectives -am process-classes");
    assertEquals(TreelineConf.markdown(), Files.readString(docs),
        "docs/configuration.md differs from TreelineConf: regenerate it with ./mvnw -q -Pdocs "
        + "-pl native-collectives -am process-classes");
  }

  @Test
  void theJarCarriesTheGeneratedDocsAndAnUnknownKeyListsTheKeysWithoutARepositoryPath()
      throws Exception {
    try (java.io.InputStream in = TreelineConf.class.getClassLoader().getResourceAsStream(
        TreelineConf.DOC_RESOURCE)) {
      assertTrue(in != null, TreelineConf.DOC_RESOURCE + " is not on the classpath");
      assertEquals(TreelineConf.markdown(), new String(in.readAllBytes(),
          java.nio.charset.StandardCharsets.UTF_8));
    }
    String m = assertThrows(IllegalArgumentException.class,
        () -> new TreelineConf(Map.of("spark.treeline.nosuchkey", "1"))).getMessage();
    for (ConfEntry<?> e : TreelineConf.entries()) {
      assertEquals(!e.internal(), m.contains(e.key() + ",") || m.contains(e.key() + " ("),
          e.key() + " in: " + m);
    }
    assertTrue(m.contains(TreelineConf.DOC_RESOURCE), m);
    assertTrue(!m.contains("docs/"), m);
  }

  @Test
  void typedValuesWithUnitsAndDefaults() {
    TreelineConf c = new TreelineConf(Map.of("spark.treeline.timeout", "90s",
        "spark.treeline.bucketBytes", "8m", "spark.treeline.algorithm", "DBT",
        "spark.app.name", "not ours"));
    assertEquals(Duration.ofSeconds(90), c.get(TreelineConf.TIMEOUT));
    assertEquals(8L << 20, c.get(TreelineConf.BUCKET_BYTES));
    assertEquals(Algorithm.DBT, io.treeline.comm.CommConfig.from(c).algorithm());
    assertEquals(32L << 20, c.get(TreelineConf.SEGMENT_BYTES));
    assertEquals(Duration.ofSeconds(90), io.treeline.comm.CommConfig.from(c).timeout());
  }

  @Test
  void badValuesAndTyposAreRefusedWithTheKeyAndTheRule() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new TreelineConf(Map.of("spark.treeline.segmentBytes", "1000")));
    assertTrue(e.getMessage().contains("spark.treeline.segmentBytes='1000'"), e.getMessage());
    assertTrue(e.getMessage().contains("multiple of 64"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new TreelineConf(Map.of("spark.treeline.timout", "5s")));
    assertTrue(e.getMessage().contains("did you mean spark.treeline.timeout?"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new TreelineConf(Map.of("spark.treeline.timeout", "soon")));
    assertTrue(e.getMessage().contains("not a valid duration"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new TreelineConf(Map.of("spark.treeline.algorithm", "butterfly")));
    assertTrue(e.getMessage().contains("must be auto or one of ring, dbt, oneshot, twoshot, hierarchical"), e.getMessage());
  }
}

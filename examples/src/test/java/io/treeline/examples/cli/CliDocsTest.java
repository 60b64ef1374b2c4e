package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CliDocsTest {
  @Test
  void theCommittedDocsAreWhatTheAnnotationsGenerate() throws Exception {
    // the module runs with its own folder as working directory; the docs are at the root
    Path docs = Path.of("..", "docs", "cli.md");
    assertTrue(Files.exists(docs), "docs/cli.md is missing: run ./mvnw -q -Pdocs -pl examples "
        + "-am process-classes");
    assertEquals(CliDocs.markdown(), Files.readString(docs), "docs/cli.md differs from the "
        + "command line's annotations: regenerate it with ./mvnw -q -Pdocs -pl examples -am "
        + "process-classes");
  }

  @Test
  void everyCommandIsDocumented() {
    String md = CliDocs.markdown();
    for (String c : new String[] {"train", "bench", "bench device", "run", "plan", "topo",
        "completion"}) {
      assertTrue(md.contains("\n## ./treeline " + c + "\n"), c);
    }
  }
}

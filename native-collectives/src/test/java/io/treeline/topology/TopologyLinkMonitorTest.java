package io.treeline.topology;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the executor's metrics see: links re-read at every poll against their start-up state. */
class TopologyLinkMonitorTest {
  @Test
  void aLinkThatDegradesOrLogsAerErrorsDuringTheJobBecomesAWarning(@TempDir Path sys)
      throws Exception {
    TopologyTest.device(sys, "0000:3b:00.0", "0x030200", "16.0", 16, "16.0", 16, 2);
    TopologyTest.device(sys, "0000:5e:00.0", "0x020000", "16.0", 16, "16.0", 16, -1);
    LinkMonitor links = new LinkMonitor(sys);
    assertEquals(List.of("0000:3b:00.0", "0000:5e:00.0"), links.devices());
    assertEquals(List.of(), links.warnings());
    assertEquals(100.0, LinkMonitor.linkPercent(links.now("0000:3b:00.0")));

    TopologyTest.device(sys, "0000:3b:00.0", "0x030200", "8.0", 16, "16.0", 16, 9);
    List<LinkHealth.Warning> w = links.warnings();
    assertEquals(2, w.size(), w.toString());
    assertTrue(w.get(0).message().startsWith("link at 8 GT/s x16"), w.get(0).message());
    assertTrue(w.get(1).message().startsWith("AER corrected errors rose from 2 to 9"),
        w.get(1).message());
    assertEquals(50.0, LinkMonitor.linkPercent(links.now("0000:3b:00.0")));
    assertEquals(9, links.now("0000:3b:00.0").aerCorrectable());
  }
}

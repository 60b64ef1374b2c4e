package io.treeline.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TopologyTest {
  static String resource(String name) throws IOException {
    try (InputStream in = TopologyTest.class.getResourceAsStream("/topology/" + name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void parsesTheMatrixQuotedInSeed004() throws IOException {
    TopoMatrix m = TopoMatrix.parse(resource("seed004-topo-m.txt"));
    assertEquals(10, m.devices().size());
    assertEquals(8, m.gpus().size());
    assertEquals("NV8", m.link(0, 7).toString());
    assertEquals(LinkClass.Kind.PIX, m.link(0, 8).kind()); // GPU0 - NIC0
    assertEquals(LinkClass.Kind.PXB, m.link(0, 9).kind());
    assertEquals(LinkClass.SELF, m.link(3, 3));
  }

  @Test
  void twoPcieSwitchesOfFourGpusAreOrderedToAlternateSwitches() throws IOException {
    TopoMatrix m = TopoMatrix.parse(resource("two-switches-topo-m.txt"));
    assertEquals("0-31", m.cpuAffinity().get(0));
    assertEquals("1", m.numaAffinity().get(4));
    int[] groups = m.switchGroups();
    assertArrayEquals(new int[] {0, 0, 0, 0, 1, 1, 1, 1}, groups);
    int[] order = TopologyOrder.spreadAcrossSwitches(groups);
    // ring/chain neighbours and two-shot slice owners alternate between the switches
    assertArrayEquals(new int[] {0, 4, 1, 5, 2, 6, 3, 7}, order);
    for (int i = 0; i + 1 < order.length; i++) {
      assertTrue(groups[order[i]] != groups[order[i + 1]]);
    }
  }

  /** Writes one device of a fixture sysfs tree. */
  static void device(Path root, String bdf, String cls, String speed, int width,
      String maxSpeed, int maxWidth, long aerCorrectable) throws IOException {
    Path d = root.resolve("bus/pci/devices").resolve(bdf);
    Files.createDirectories(d);
    Files.writeString(d.resolve("vendor"), cls.startsWith("0x03") ? "0x10de\n" : "0x15b3\n");
    Files.writeString(d.resolve("class"), cls + "\n");
    Files.writeString(d.resolve("numa_node"), "0\n");
    Files.writeString(d.resolve("current_link_speed"), speed + " GT/s PCIe\n");
    Files.writeString(d.resolve("current_link_width"), width + "\n");
    Files.writeString(d.resolve("max_link_speed"), maxSpeed + " GT/s PCIe\n");
    Files.writeString(d.resolve("max_link_width"), maxWidth + "\n");
    if (aerCorrectable >= 0) {
      Files.writeString(d.resolve("aer_dev_correctable"), "RxErr 0\nBadTLP " + aerCorrectable
          + "\nTOTAL_ERR_COR " + aerCorrectable + "\n");
      Files.writeString(d.resolve("aer_dev_nonfatal"), "TOTAL_ERR_NONFATAL 0\n");
      Files.writeString(d.resolve("aer_dev_fatal"), "TOTAL_ERR_FATAL 0\n");
    }
  }

  @Test
  void aHealthyNodeHasNoWarnings(@TempDir Path sys) throws IOException {
    device(sys, "0000:3b:00.0", "0x030200", "32.0", 16, "32.0", 16, 0);
    device(sys, "0000:5e:00.0", "0x020000", "16.0", 16, "16.0", 16, -1);
    TopologyReport r = TopologyReport.collect(sys, "", "", null);
    assertEquals(List.of(), r.warnings());
    assertEquals(1, r.gpus().size());
    assertTrue(r.text().contains("32 GT/s x16"), r.text());
    assertTrue(r.text().contains("no link warnings"), r.text());
  }

  @Test
  void aLinkTrainedDownTo8GtsOrToX8IsAWarningThatSaysWhatItCosts(@TempDir Path sys)
      throws IOException {
    device(sys, "0000:3b:00.0", "0x030200", "8.0", 16, "16.0", 16, 0);
    device(sys, "0000:86:00.0", "0x030200", "16.0", 8, "16.0", 16, 0);
    List<LinkHealth.Warning> w = LinkHealth.check(PciDevice.scan(sys), null);
    assertEquals(2, w.size(), w.toString());
    assertTrue(w.get(0).toString().contains("GPU 0000:3b:00.0: link at 8 GT/s x16, below its "
        + "maximum 16 GT/s x16: about 50% of its bandwidth"), w.get(0).toString());
    assertTrue(w.get(1).toString().contains("x8, below its maximum 16 GT/s x16"),
        w.get(1).toString());
  }

  @Test
  void risingAerCountsAgainstABaselineAreAWarning(@TempDir Path dir) throws IOException {
    Path before = dir.resolve("before");
    Path now = dir.resolve("now");
    device(before, "0000:3b:00.0", "0x030200", "16.0", 16, "16.0", 16, 3);
    device(now, "0000:3b:00.0", "0x030200", "16.0", 16, "16.0", 16, 41);
    TopologyReport r = TopologyReport.collect(now, "", "", before);
    assertEquals(1, r.warnings().size(), r.warnings().toString());
    assertTrue(r.warnings().get(0).message().contains("rose from 3 to 41"),
        r.warnings().get(0).message());
    assertTrue(r.json().contains("\"warnings\":[\"WARNING GPU 0000:3b:00.0: AER corrected"),
        r.json());
  }

  @Test
  void gpusAreNamedByUuidAndBusIdFromNvidiaSmi(@TempDir Path sys) throws IOException {
    device(sys, "0000:3b:00.0", "0x030200", "32.0", 16, "32.0", 16, -1);
    String csv = "index, uuid, pci.bus_id, name\n0, GPU-5f3c2a1e-0000-1111-2222-333344445555, "
        + "00000000:3B:00.0, NVIDIA H200\n";
    TopologyReport r = TopologyReport.collect(sys, resource("two-switches-topo-m.txt"), csv,
        null);
    assertEquals("GPU-5f3c2a1e-0000-1111-2222-333344445555", r.gpus().get(0).uuid());
    assertEquals("0000:3b:00.0", r.gpus().get(0).busId());
    assertEquals(0, r.gpus().get(0).numaNode());
    assertTrue(r.text().contains("rank order across switches: [0, 4, 1, 5, 2, 6, 3, 7]"),
        r.text());
  }

  @Test
  void theCapturedH200MachineReportsItsGpuByUuidWithAHealthyGen5Link() throws Exception {
    Path sys = Path.of(TopologyTest.class.getResource("/topology/h200-sysfs").toURI());
    TopologyReport r = TopologyReport.collect(sys, resource("h200-topo-m.txt"),
        resource("h200-gpus.csv"), null);
    assertEquals(1, r.matrix().devices().size()); // the ANSI underline of the header is gone
    assertEquals("0-15", r.matrix().cpuAffinity().get(0));
    assertEquals("GPU-d088594b-ae7f-9891-e243-8f51687ae86c", r.gpus().get(0).uuid());
    assertEquals("0000:00:06.0", r.gpus().get(0).busId());
    assertEquals("NVIDIA H200", r.gpus().get(0).name());
    assertEquals(List.of(), r.warnings());
    assertTrue(r.text().contains("0000:00:06.0   GPU    ?     32 GT/s x16      32 GT/s x16"),
        r.text());
  }

  @Test
  void theDegradedFixtureWarnsAboutHalfTheBandwidth() throws Exception {
    Path sys = Path.of(TopologyTest.class.getResource("/topology/degraded-sysfs").toURI());
    TopologyReport r = TopologyReport.collect(sys, "", "", null);
    assertEquals(1, r.warnings().size());
    assertTrue(r.text().contains("about 50% of its bandwidth"), r.text());
    assertTrue(r.text().contains("12/0/0"), r.text());
  }
}

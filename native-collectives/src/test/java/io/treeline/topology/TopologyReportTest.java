package io.treeline.topology;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's GPU identity sources, its PCI-tree fallback and its measured matrices. */
class TopologyReportTest {
  /** A captured sysfs tree of the fixture's GPUs, each with its canonical path in .path. */
  static Path sysfs(Path root, String fixture) throws IOException {
    for (PciTree.Endpoint e : TopologyPciTreeTest.endpoints(fixture)) {
      String path = e.path().replaceFirst("^/sys/devices/", "");
      String bdf = path.substring(path.lastIndexOf('/') + 1);
      Path d = root.resolve("bus/pci/devices").resolve(bdf);
      Files.createDirectories(d);
      boolean gpu = e.name().startsWith("GPU");
      Files.writeString(d.resolve("vendor"), gpu ? "0x10de\n" : "0x15b3\n");
      Files.writeString(d.resolve("class"), gpu ? "0x030200\n" : "0x020000\n");
      Files.writeString(d.resolve("numa_node"), e.numaNode() + "\n");
      Files.writeString(d.resolve("current_link_speed"), "16.0 GT/s PCIe\n");
      Files.writeString(d.resolve("current_link_width"), "16\n");
      Files.writeString(d.resolve("max_link_speed"), "16.0 GT/s PCIe\n");
      Files.writeString(d.resolve("max_link_width"), "16\n");
      Files.writeString(d.resolve(".path"), path + "\n");
    }
    return root;
  }

  @Test
  void withoutNvidiaSmiTheLinkClassesComeFromThePciTree(@TempDir Path dir) throws IOException {
    Path sys = sysfs(dir, "two-switches-pcitree.txt");
    TopologyReport r = TopologyReport.collect(TopologyReport.Sources.live(sys).topo("", null)
        .gpuCsv("", null));
    assertEquals(8, r.gpus().size());
    assertTrue(r.linkSource().startsWith("PCI tree"), r.linkSource());
    TopologyPciTreeTest.assertSameLinks(
        TopoMatrix.parse(TopologyTest.resource("two-switches-topo-m.txt")), r.matrix());
    assertTrue(r.text().contains("link classes (PCI tree"), r.text());
    assertTrue(r.text().contains("rank order across switches: [0, 4, 1, 5, 2, 6, 3, 7]"),
        r.text());
    assertTrue(r.json().contains("\"links\":{\"source\":\"PCI tree"), r.json());
  }

  @Test
  void theDriverNamesTheGpusByUuidAndItsOrdinalsNameTheMatrix(@TempDir Path dir)
      throws IOException {
    Path sys = sysfs(dir, "dual-socket-pcitree.txt");
    // the driver's order (CUDA ordinals) is not PCI order: GPU0 of the report is 0000:83:00.0
    List<TopologyReport.Gpu> driver = List.of(
        new TopologyReport.Gpu(0, "GPU-00000000-0000-0000-0000-000000000083", "0000:83:00.0",
            "NVIDIA H200", -1),
        new TopologyReport.Gpu(1, "GPU-00000000-0000-0000-0000-00000000001c", "0000:1C:00.0",
            "NVIDIA H200", -1));
    TopologyReport r = TopologyReport.collect(TopologyReport.Sources.live(sys).topo("", null)
        .gpuCsv("", null).driver(driver, null));
    assertTrue(r.gpuSource().startsWith("CUDA driver"), r.gpuSource());
    assertEquals("0000:1c:00.0", r.gpus().get(1).busId());
    assertEquals(1, r.gpus().get(0).numaNode()); // from sysfs
    assertEquals(List.of("GPU0", "GPU1", "NIC0"), r.matrix().devices());
    assertEquals("SYS", r.matrix().link(0, 1).toString());
    assertEquals("NODE", r.matrix().link(1, 2).toString());
  }

  @Test
  void whenTheDriverListsNothingTheReportSaysWhyAndFallsBackToTheGpuList(@TempDir Path dir)
      throws IOException {
    Path sys = sysfs(dir, "two-switches-pcitree.txt");
    String csv = "index, uuid, pci.bus_id, name\n0, GPU-5f3c2a1e-0000-1111-2222-333344445555, "
        + "00000000:03:00.0, NVIDIA A100\n";
    TopologyReport r = TopologyReport.collect(TopologyReport.Sources.live(sys).topo("", null)
        .gpuCsv(csv, "gpus.csv").driver(List.of(), "no CUDA driver: libcuda.so.1: cannot "
            + "open shared object file"));
    assertEquals("GPU-5f3c2a1e-0000-1111-2222-333344445555", r.gpus().get(0).uuid());
    assertTrue(r.gpuSource().startsWith("gpus.csv"), r.gpuSource());
    assertTrue(r.notes().contains("no CUDA driver: libcuda.so.1: cannot open "
        + "shared object file"), r.notes().toString());
  }

  @Test
  void theIpcAndBandwidthMatricesArePrintedWithTheirUnitsAndErrors(@TempDir Path dir)
      throws IOException {
    Path sys = sysfs(dir, "dual-socket-pcitree.txt");
    IpcOpenMatrix ipc = new IpcOpenMatrix(new boolean[][] {{true, false}, {true, true}},
        new String[][] {{null, "opener GPU 1, owner GPU 0: open: CUDA_ERROR_PEER_ACCESS_"
            + "UNSUPPORTED"}, {null, null}}, null);
    BandwidthMatrix mib = new BandwidthMatrix(1 << 20, 10,
        new double[][] {{1500.25, 11.5}, {Double.NaN, 1490}},
        new boolean[][] {{true, false}, {false, true}},
        new String[][] {{null, null}, {"copy of 1048576 B from GPU 1 to GPU 0 failed: x", null}});
    TopologyReport r = TopologyReport.collect(sys, "", "", null).withIpc(ipc)
        .withBandwidth(List.of(mib), null);
    String t = r.text();
    assertTrue(t.contains("IPC handles opened by another process (row: owner GPU, column: "
        + "opener GPU)"), t);
    assertTrue(t.contains("  GPU0  yes   NO    \n"), t);
    assertTrue(t.contains("GPU0 -> GPU1: opener GPU 1, owner GPU 0: open: CUDA_ERROR_PEER"), t);
    assertTrue(t.contains("1 MiB, 10 repetitions"), t);
    assertTrue(t.contains("  GPU0     1500.3   11.5*    \n"), t);
    assertTrue(t.contains("  GPU1     failed   1490.0   \n"), t);
    assertTrue(t.contains("staged the copy through host memory"), t);
    assertTrue(t.contains(BandwidthMatrix.UNIT), t);
    String j = r.json();
    assertTrue(j.contains("\"ipc\":{\"unavailable\":null,\"open\":[[true,false],[true,true]],"
        + "\"errors\":[[null,\"opener GPU 1, owner GPU 0: open: CUDA_ERROR_PEER_ACCESS_"
        + "UNSUPPORTED\"],[null,null]]}"), j);
    assertTrue(j.contains("\"matrices\":[{\"bytes\":1048576,\"repetitions\":10,\"gbps\":"
        + "[[1500.25,11.50],[null,1490.00]],\"peerAccess\":[[true,false],[false,true]]"), j);
  }

  @Test
  void aMachineWithoutAGpuSaysSoAndPrintsNoMatrices(@TempDir Path sys) throws IOException {
    TopologyTest.device(sys, "0000:00:03.0", "0x020000", "16.0", 16, "16.0", 16, -1);
    TopologyReport r = TopologyReport.collect(TopologyReport.Sources.live(sys).topo("", null)
        .gpuCsv("", null).driver(null, "no CUDA driver: libcuda.so.1: cannot open shared "
            + "object file: No such file or directory (Treeline runs its host path)"))
        .withIpc(IpcOpenMatrix.unavailable("no CUDA driver"))
        .withBandwidth(List.of(), "no CUDA driver");
    assertEquals(List.of(), r.gpus());
    assertNull(r.matrix());
    String t = r.text();
    assertTrue(t.contains("no NVIDIA GPU found: Treeline runs its host path"), t);
    assertTrue(t.contains("0000:00:03.0   NIC"), t);
    assertTrue(t.contains("not probed: no CUDA driver"), t);
    assertTrue(t.contains("not measured: no CUDA driver"), t);
    assertTrue(r.json().contains("\"gpus\":[],\"links\":null,\"ipc\":{\"unavailable\":"
        + "\"no CUDA driver\",\"open\":[],\"errors\":[]}"), r.json());
  }
}

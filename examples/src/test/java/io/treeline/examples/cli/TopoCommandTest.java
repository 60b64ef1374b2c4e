package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.kernels.GpuDevices;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TopoCommandTest {
  /** The fixtures of the topology package, from this module's directory (surefire's cwd). */
  private static final Path FIXTURES = Path.of("../native-collectives/src/test/resources/"
      + "topology");

  private record Result(int code, String out, String err) {
  }

  private static Result run(String... argv) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Treeline.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Result(code, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  /** A sysfs tree holding one NIC, like this kind of machine's virtio NIC. */
  private static Path nicOnly(Path root) throws Exception {
    Path d = root.resolve("bus/pci/devices/0000:00:03.0");
    Files.createDirectories(d);
    Files.writeString(d.resolve("vendor"), "0x1af4\n");
    Files.writeString(d.resolve("class"), "0x020000\n");
    Files.writeString(d.resolve("numa_node"), "-1\n");
    return root;
  }

  @Test
  void theCapturedH200ReportNamesItsGpuByUuidAndLeavesThisMachineOut() {
    Result r = run("topo", "--sysfs", FIXTURES.resolve("h200-sysfs").toString(), "--topo-file",
        FIXTURES.resolve("h200-topo-m.txt").toString(), "--gpus-file",
        FIXTURES.resolve("h200-gpus.csv").toString());
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("  0   GPU-d088594b-ae7f-9891-e243-8f51687ae86c   0000:00:06.0"),
        r.out);
    assertTrue(r.out.contains("link classes (topo file "), r.out);
    assertTrue(!r.out.contains("CUDA driver"), r.out);
  }

  @Test
  void measuringIsRefusedOnACapturedReport() {
    Result r = run("topo", "--topo-file", FIXTURES.resolve("h200-topo-m.txt").toString(),
        "--measure");
    assertEquals(2, r.code, r.out);
    assertTrue(r.err.contains("do not combine with a captured --topo-file"), r.err);
  }

  @Test
  void withoutADriverTheReportSaysWhyAndStillListsThePciDevices(@TempDir Path dir)
      throws Exception {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeFalse(l.available(), "this machine has a CUDA driver");
    Result r = run("topo", "--sysfs", nicOnly(dir).toString(), "--measure");
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("note: " + l.unavailable()), r.out);
    assertTrue(r.out.contains("no NVIDIA GPU found"), r.out);
    assertTrue(r.out.contains("0000:00:03.0   NIC"), r.out);
    assertTrue(r.out.contains("  not probed: " + l.unavailable()), r.out);
    assertTrue(r.out.contains("  not measured: " + l.unavailable()), r.out);
    Result j = run("topo", "--sysfs", dir.toString(), "--probe-ipc", "--json");
    assertEquals(0, j.code, j.err);
    assertTrue(j.out.startsWith("{\"gpuSource\":null,\"gpus\":[],\"links\":null,\"ipc\":{"
        + "\"unavailable\":\"no CUDA driver"), j.out);
    assertTrue(j.out.contains("\"bandwidth\":null"), j.out);
  }

  /** On a GPU machine: every GPU named by UUID, every pair probed and measured. */
  @Tag("gpu")
  @Test
  void onAGpuMachineTheMeasuredReportHasEveryPair() {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeTrue(l.available(), () -> "no GPU here: " + l.unavailable());
    Result r = run("topo", "--measure", "--json");
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("\"uuid\":\"" + l.gpus().get(0).uuid() + "\""), r.out);
    assertTrue(r.out.contains("\"bytes\":67108864"), r.out);
    assertTrue(!r.out.contains("\"gbps\":[[null"), r.out);
  }
}

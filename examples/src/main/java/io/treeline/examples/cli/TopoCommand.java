package io.treeline.examples.cli;

import io.treeline.topology.TopologyReport;
import java.io.PrintStream;
import java.nio.file.Path;

/** {@code ./treeline topo}: this node's GPUs, link classes, PCIe link health and warnings. */
final class TopoCommand {
  private TopoCommand() {
  }

  static int run(String[] argv, PrintStream out) throws Exception {
    Args a = new Args("topo", "Report this node's GPUs (UUID, PCI bus id, NUMA node), their link "
        + "classes (nvidia-smi topo -m), the PCIe\nlink health of every GPU and NIC (speed and "
        + "width against their maximum, AER counters) and the warnings.\nCaptured inputs "
        + "(scripts/device/capture-topology.sh) replace the live ones, to check a colleague's "
        + "report.")
        .option("sysfs", "DIR", "/sys", "a sysfs tree (its bus/pci/devices is read)")
        .option("topo-file", "FILE", null, "a captured nvidia-smi topo -m output")
        .option("gpus-file", "FILE", null, "a captured nvidia-smi --query-gpu=index,uuid,"
            + "pci.bus_id,name --format=csv")
        .option("aer-baseline", "DIR", null, "an earlier sysfs capture: warn on AER counts "
            + "that rose since")
        .flag("json", "print JSON for programs");
    if (!a.parse(argv)) {
      return 0;
    }
    Path topo = a.get("topo-file") == null ? null : Path.of(a.get("topo-file"));
    Path gpus = a.get("gpus-file") == null ? null : Path.of(a.get("gpus-file"));
    String topoText = TopologyReport.read(topo);
    String gpuCsv = TopologyReport.read(gpus);
    if (topoText != null && gpuCsv == null) {
      gpuCsv = ""; // a captured report: do not mix in this machine's nvidia-smi
    }
    TopologyReport r = TopologyReport.collect(Path.of(a.get("sysfs")), topoText, gpuCsv,
        a.get("aer-baseline") == null ? null : Path.of(a.get("aer-baseline")));
    out.print(a.has("json") ? r.json() + "\n" : r.text());
    return 0;
  }
}

package io.treeline.examples.cli;

import io.treeline.kernels.GpuDevices;
import io.treeline.kernels.IpcOpenProbe;
import io.treeline.kernels.P2pBandwidth;
import io.treeline.topology.BandwidthMatrix;
import io.treeline.topology.IpcOpenMatrix;
import io.treeline.topology.TopologyReport;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code ./treeline topo}: this node's GPUs, link classes, PCIe link health and warnings; with
 * {@code --probe-ipc} which GPU pairs open each other's IPC handles, with {@code --measure} that
 * and the peer-copy bandwidth matrix.
 */
final class TopoCommand {
  private TopoCommand() {
  }

  static int run(String[] argv, PrintStream out) throws Exception {
    Args a = new Args("topo", "Report this node's GPUs (UUID, PCI bus id, NUMA node: from the "
        + "CUDA driver, else nvidia-smi, else sysfs),\ntheir link classes (nvidia-smi topo -m, "
        + "else the PCI tree), the PCIe link health of every GPU and NIC\n(speed and width "
        + "against their maximum, AER counters) and the warnings. --probe-ipc adds which GPU\n"
        + "pairs can open each other's CUDA IPC handles (a second JVM opens them); --measure "
        + "adds that\nand the 1 MiB / 64 MiB copy bandwidth between every pair. Captured inputs "
        + "(scripts/device/\ncapture-topology.sh) replace the live ones, to check a colleague's "
        + "report.")
        .option("sysfs", "DIR", "/sys", "a sysfs tree (its bus/pci/devices is read)")
        .option("topo-file", "FILE", null, "a captured nvidia-smi topo -m output")
        .option("gpus-file", "FILE", null, "a captured nvidia-smi --query-gpu=index,uuid,"
            + "pci.bus_id,name --format=csv")
        .option("aer-baseline", "DIR", null, "an earlier sysfs capture: warn on AER counts "
            + "that rose since")
        .flag("probe-ipc", "probe which GPU pairs open each other's IPC memory handles")
        .flag("measure", "--probe-ipc, and measure the copy bandwidth between every GPU pair")
        .option("ipc-timeout", "SECONDS", "60", "deadline of the IPC probe's child JVM")
        .flag("json", "print JSON for programs");
    if (!a.parse(argv)) {
      return 0;
    }
    Path topo = a.get("topo-file") == null ? null : Path.of(a.get("topo-file"));
    Path gpus = a.get("gpus-file") == null ? null : Path.of(a.get("gpus-file"));
    boolean captured = topo != null || gpus != null;
    boolean measure = a.has("measure");
    boolean probeIpc = measure || a.has("probe-ipc");
    if (captured && probeIpc) {
      throw new IllegalArgumentException("--measure and --probe-ipc measure this machine's "
          + "GPUs; they do not combine with a captured --topo-file or --gpus-file");
    }
    int ipcTimeout = Integer.parseInt(a.get("ipc-timeout"));
    if (ipcTimeout < 1) {
      throw new IllegalArgumentException("--ipc-timeout must be at least 1 second");
    }
    TopologyReport.Sources src = TopologyReport.Sources.live(Path.of(a.get("sysfs")));
    if (captured) {
      // a captured report: do not mix in this machine's driver or nvidia-smi
      src = src.topo(orEmpty(TopologyReport.read(topo)), "topo file " + topo)
          .gpuCsv(orEmpty(TopologyReport.read(gpus)), "GPU list file " + gpus);
    } else {
      GpuDevices.Listing listing = GpuDevices.list();
      List<TopologyReport.Gpu> found = new ArrayList<>();
      for (GpuDevices.Gpu g : listing.gpus()) {
        found.add(new TopologyReport.Gpu(g.ordinal(), g.uuid(), g.pciBusId(), g.name(), -1));
      }
      src = src.driver(found, listing.unavailable());
    }
    if (a.get("aer-baseline") != null) {
      src = src.aerBaseline(Path.of(a.get("aer-baseline")));
    }
    TopologyReport r = TopologyReport.collect(src);
    if (!captured && r.gpus().size() > 1 && r.gpuSource() != null
        && r.gpuSource().startsWith("CUDA driver") && r.linkSource() != null
        && r.linkSource().startsWith("nvidia-smi")
        && !"PCI_BUS_ID".equals(System.getenv("CUDA_DEVICE_ORDER"))) {
      r = r.withNote("the GPU list is numbered by CUDA ordinal (fastest first by default), the "
          + "nvidia-smi matrix in PCI bus order: match them by bus id, or set "
          + "CUDA_DEVICE_ORDER=PCI_BUS_ID to number both alike");
    }
    if (probeIpc) {
      r = r.withIpc(ipc(IpcOpenProbe.probe(Duration.ofSeconds(ipcTimeout))));
    }
    if (measure) {
      P2pBandwidth.Result m = P2pBandwidth.measure();
      List<BandwidthMatrix> matrices = new ArrayList<>();
      for (P2pBandwidth.Matrix x : m.matrices()) {
        matrices.add(new BandwidthMatrix(x.bytes(), x.repetitions(), x.gbps(), x.peerAccess(),
            x.error()));
      }
      r = r.withBandwidth(matrices, m.unavailable());
    }
    out.print(a.has("json") ? r.json() + "\n" : r.text());
    return 0;
  }

  static IpcOpenMatrix ipc(IpcOpenProbe.Result p) {
    return p.unavailable() != null ? IpcOpenMatrix.unavailable(p.unavailable())
        : new IpcOpenMatrix(p.open(), p.error(), null);
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }
}

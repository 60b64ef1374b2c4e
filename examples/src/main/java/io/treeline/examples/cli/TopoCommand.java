package io.treeline.examples.cli;

import io.treeline.kernels.GpuDevices;
import io.treeline.kernels.IpcOpenProbe;
import io.treeline.kernels.P2pBandwidth;
import io.treeline.topology.BandwidthMatrix;
import io.treeline.topology.IpcOpenMatrix;
import io.treeline.topology.TopologyReport;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./treeline topo}: this node's GPUs, link classes, PCIe link health and warnings; with
 * {@code --probe-ipc} which GPU pairs open each other's IPC handles, with {@code --measure} that
 * and the peer-copy bandwidth matrix.
 */
@Command(name = "topo",
    header = "GPUs, link classes, PCIe link health and warnings of this node", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, sortOptions = false,
    description = {"Report this node's GPUs (UUID, PCI bus id, NUMA node: from the CUDA driver, "
        + "else nvidia-smi, else sysfs), their link classes (nvidia-smi topo -m, else the PCI "
        + "tree), the PCIe link health of every GPU and NIC (speed and width against their "
        + "maximum, AER counters) and the warnings. --probe-ipc adds which GPU pairs can open "
        + "each other's CUDA IPC handles (a second JVM opens them); --measure adds that and the "
        + "1 MiB / 64 MiB copy bandwidth between every pair. Captured inputs "
        + "(scripts/device/capture-topology.sh) replace the live ones, to check a colleague's "
        + "report."})
final class TopoCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--sysfs", paramLabel = "DIR", defaultValue = "/sys",
      description = "a sysfs tree (its bus/pci/devices is read) (default: ${DEFAULT-VALUE})")
  Path sysfs;

  @Option(names = "--topo-file", paramLabel = "FILE",
      description = "a captured nvidia-smi topo -m output")
  Path topoFile;

  @Option(names = "--gpus-file", paramLabel = "FILE", description = "a captured nvidia-smi "
      + "--query-gpu=index,uuid,pci.bus_id,name --format=csv")
  Path gpusFile;

  @Option(names = "--aer-baseline", paramLabel = "DIR",
      description = "an earlier sysfs capture: warn on AER counts that rose since")
  Path aerBaseline;

  @Option(names = "--probe-ipc",
      description = "probe which GPU pairs open each other's IPC memory handles")
  boolean probeIpc;

  @Option(names = "--measure",
      description = "--probe-ipc, and measure the copy bandwidth between every GPU pair")
  boolean measure;

  @Option(names = "--ipc-timeout", paramLabel = "DURATION", defaultValue = "60s",
      description = "deadline of the IPC probe's child JVM, 1s..1h; a plain number is seconds "
          + "(default: ${DEFAULT-VALUE})")
  Duration ipcTimeout;

  @Option(names = "--json", description = "print JSON for programs")
  boolean json;

  TopoCommand(PrintStream out) {
    this.out = out;
  }

  @Override
  public Integer call() throws Exception {
    Path topo = topoFile;
    Path gpus = gpusFile;
    boolean captured = topo != null || gpus != null;
    boolean probeIpc = measure || this.probeIpc;
    if (captured && probeIpc) {
      throw Units.usage(spec, "--measure and --probe-ipc measure this machine's GPUs; they do "
          + "not combine with a captured --topo-file or --gpus-file");
    }
    Units.durationRange(spec, "--ipc-timeout", ipcTimeout, Duration.ofSeconds(1),
        Duration.ofHours(1));
    for (Path f : new Path[] {topo, gpus}) {
      if (f != null && !Files.isReadable(f)) {
        throw Units.usage(spec, (f == topo ? "--topo-file " : "--gpus-file ") + f
            + ": no such readable file");
      }
    }
    TopologyReport.Sources src = TopologyReport.Sources.live(sysfs);
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
    if (aerBaseline != null) {
      src = src.aerBaseline(aerBaseline);
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
      r = r.withIpc(ipc(IpcOpenProbe.probe(ipcTimeout)));
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
    out.print(json ? r.json() + "\n" : r.text());
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

package io.treeline.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A node's GPUs, their link classes, their PCIe link health and the warnings, from live
 * sources (the CUDA driver, {@code nvidia-smi}, {@code /sys}) or captured ones (a sysfs tree, a
 * {@code nvidia-smi topo -m} text, a GPU list CSV), plus what was measured on the GPUs when
 * asked (which pairs open each other's IPC handles, the peer-copy bandwidth), as
 * {@code ./treeline topo} prints it and the executor plugin logs it.
 *
 * <p>Where each part came from is part of the report ({@code gpuSource}, {@code linkSource}):
 * a link class read from nvidia-smi knows NVLink, one derived from the PCI tree does not.
 */
public record TopologyReport(List<Gpu> gpus, String gpuSource, TopoMatrix matrix,
    String linkSource, List<PciDevice> pci, List<LinkHealth.Warning> warnings,
    List<String> notes, IpcOpenMatrix ipc, List<BandwidthMatrix> bandwidth,
    String bandwidthUnavailable) {

  /** A GPU by its stable identity: UUID and PCI bus id, never the CUDA ordinal. */
  public record Gpu(int index, String uuid, String busId, String name, int numaNode) {
  }

  /**
   * What to read. Null fields are read live: {@code topoText} null runs
   * {@code nvidia-smi topo -m}, {@code gpuCsv} null runs nvidia-smi's GPU query (only when the
   * matrix is live too); an empty text means "none" (a captured report without it).
   * {@code driverGpus} are the GPUs the CUDA driver listed (null or empty: none), preferred
   * over nvidia-smi because they are what this process will address; {@code driverNote} says
   * why the driver listed none.
   */
  public record Sources(Path sysfs, String topoText, String topoLabel, String gpuCsv,
      String gpuLabel, Path aerBaseline, List<Gpu> driverGpus, String driverNote) {
    public static Sources live(Path sysfs) {
      return new Sources(sysfs, null, null, null, null, null, null, null);
    }

    /** A captured {@code nvidia-smi topo -m}; {@code label} names it in the report. */
    public Sources topo(String text, String label) {
      return new Sources(sysfs, text, label, gpuCsv, gpuLabel, aerBaseline, driverGpus,
          driverNote);
    }

    /** A captured {@code nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv}. */
    public Sources gpuCsv(String csv, String label) {
      return new Sources(sysfs, topoText, topoLabel, csv, label, aerBaseline, driverGpus,
          driverNote);
    }

    public Sources aerBaseline(Path dir) {
      return new Sources(sysfs, topoText, topoLabel, gpuCsv, gpuLabel, dir, driverGpus,
          driverNote);
    }

    public Sources driver(List<Gpu> gpus, String note) {
      return new Sources(sysfs, topoText, topoLabel, gpuCsv, gpuLabel, aerBaseline, gpus, note);
    }
  }

  /**
   * @param sysfs the sysfs root (/sys live)
   * @param topoText nvidia-smi topo -m output, or null to run nvidia-smi (if present)
   * @param gpuCsv nvidia-smi --query-gpu=index,uuid,pci.bus_id,name CSV, or null to run it
   * @param baseline a captured sysfs tree to compare AER counters with, or null
   */
  public static TopologyReport collect(Path sysfs, String topoText, String gpuCsv,
      Path baseline) throws IOException {
    return collect(new Sources(sysfs, topoText, topoText == null ? null : "topo file", gpuCsv,
        gpuCsv == null ? null : "GPU list file", baseline, null, null));
  }

  public static TopologyReport collect(Sources src) throws IOException {
    List<String> notes = new ArrayList<>();
    String topoText = src.topoText();
    String topoLabel = src.topoLabel();
    String gpuCsv = src.gpuCsv();
    String gpuLabel = src.gpuLabel();
    boolean live = topoText == null;
    if (live) {
      topoText = run("nvidia-smi", "topo", "-m");
      topoLabel = "nvidia-smi topo -m";
      if (topoText == null) {
        notes.add("nvidia-smi not found: no NVLink information; link classes come from the PCI "
            + "tree when there are GPUs");
      }
    }
    if (gpuCsv == null && live) {
      gpuCsv = run("nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name", "--format=csv");
      gpuLabel = "nvidia-smi";
    }
    TopoMatrix m = null;
    String linkSource = null;
    if (topoText != null && !topoText.isBlank()) {
      try {
        m = TopoMatrix.parse(topoText);
        linkSource = topoLabel;
      } catch (IllegalArgumentException e) {
        notes.add(topoLabel + " output not understood: " + e.getMessage());
      }
    }
    List<PciDevice> pci = PciDevice.scan(src.sysfs());
    if (pci.isEmpty()) {
      notes.add("no PCI devices readable under " + src.sysfs().resolve("bus/pci/devices"));
    }
    Map<String, PciDevice> byBdf = new HashMap<>();
    for (PciDevice d : pci) {
      byBdf.put(d.bdf().toLowerCase(), d);
    }
    List<Gpu> gpus = new ArrayList<>();
    String gpuSource = null;
    if (src.driverGpus() != null && !src.driverGpus().isEmpty()) {
      for (Gpu g : src.driverGpus()) {
        PciDevice d = byBdf.get(normalizeBusId(g.busId()));
        gpus.add(new Gpu(g.index(), g.uuid(), normalizeBusId(g.busId()), g.name(),
            g.numaNode() >= 0 || d == null ? g.numaNode() : d.numaNode()));
      }
      gpuSource = "CUDA driver: cuDeviceGetUuid, cuDeviceGetPCIBusId; index = CUDA ordinal";
    } else if (src.driverNote() != null) {
      notes.add(src.driverNote());
    }
    if (gpus.isEmpty() && gpuCsv != null) {
      for (String line : gpuCsv.lines().skip(1).toList()) {
        String[] c = line.split(",\\s*");
        if (c.length >= 4 && c[0].trim().matches("\\d+")) {
          String bdf = normalizeBusId(c[2].trim());
          PciDevice d = byBdf.get(bdf);
          gpus.add(new Gpu(Integer.parseInt(c[0].trim()), c[1].trim(), bdf, c[3].trim(),
              d == null ? -1 : d.numaNode()));
        }
      }
      gpuSource = gpus.isEmpty() ? null : gpuLabel + "; index = nvidia-smi's, PCI bus order";
    }
    if (gpus.isEmpty()) {
      int i = 0;
      for (PciDevice d : pci) {
        if (d.isGpu()) {
          gpus.add(new Gpu(i++, "?", d.bdf(), "NVIDIA GPU (no driver, no nvidia-smi: UUID "
              + "unknown)", d.numaNode()));
        }
      }
      gpuSource = gpus.isEmpty() ? null : "sysfs; index = PCI bus order";
    }
    if (gpus.isEmpty()) {
      notes.add("no NVIDIA GPU found: Treeline runs its host path (shared memory, TCP)");
    }
    if (m == null && !gpus.isEmpty()) {
      try {
        m = pciTreeMatrix(gpus, pci, byBdf);
        linkSource = "PCI tree (" + src.sysfs().resolve("bus/pci/devices")
            + "; no NVLink information)";
      } catch (IllegalArgumentException e) {
        notes.add("no link classes from the PCI tree: " + e.getMessage());
      }
    }
    Map<String, PciDevice> base = null;
    if (src.aerBaseline() != null) {
      base = new HashMap<>();
      for (PciDevice d : PciDevice.scan(src.aerBaseline())) {
        base.put(d.bdf(), d);
      }
    }
    return new TopologyReport(List.copyOf(gpus), gpuSource, m, linkSource, pci,
        LinkHealth.check(pci, base), notes, null, List.of(), null);
  }

  /** GPUs in report order (GPU0..), then NICs (NIC0..), as nvidia-smi lays out its matrix. */
  private static TopoMatrix pciTreeMatrix(List<Gpu> gpus, List<PciDevice> pci,
      Map<String, PciDevice> byBdf) {
    List<PciTree.Endpoint> ends = new ArrayList<>();
    for (Gpu g : gpus) {
      PciDevice d = byBdf.get(g.busId());
      if (d == null) {
        throw new IllegalArgumentException("GPU " + g.index() + " (" + g.busId() + ") is not "
            + "under the sysfs tree read");
      }
      ends.add(new PciTree.Endpoint("GPU" + g.index(), d.path(), d.numaNode()));
    }
    int nic = 0;
    for (PciDevice d : pci) {
      if (d.isNic()) {
        ends.add(new PciTree.Endpoint("NIC" + nic++, d.path(), d.numaNode()));
      }
    }
    return PciTree.matrix(ends);
  }

  /** This report with the probed IPC matrix. */
  public TopologyReport withIpc(IpcOpenMatrix probed) {
    return new TopologyReport(gpus, gpuSource, matrix, linkSource, pci, warnings, notes, probed,
        bandwidth, bandwidthUnavailable);
  }

  /** This report with the measured bandwidth (or why none was measured). */
  public TopologyReport withBandwidth(List<BandwidthMatrix> measured, String unavailable) {
    return new TopologyReport(gpus, gpuSource, matrix, linkSource, pci, warnings, notes, ipc,
        List.copyOf(measured), unavailable);
  }

  /** nvidia-smi's "00000000:3B:00.0" as sysfs names it: "0000:3b:00.0". */
  static String normalizeBusId(String id) {
    String s = id.trim().toLowerCase();
    String[] parts = s.split(":", 2);
    if (parts.length == 2 && parts[0].length() > 4) {
      s = parts[0].substring(parts[0].length() - 4) + ":" + parts[1];
    }
    return s;
  }

  /** A command's output, or null when it is missing, fails or takes more than 20 s. */
  private static String run(String... cmd) {
    Path log = null;
    try {
      // output to a file, not a pipe: reading a pipe would wait for a hung nvidia-smi forever
      log = Files.createTempFile("treeline-" + cmd[0], ".txt");
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return p.exitValue() == 0 ? Files.readString(log) : null;
    } catch (IOException e) {
      return null; // not installed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } finally {
      if (log != null) {
        try {
          Files.deleteIfExists(log);
        } catch (IOException e) {
          // a temp file left behind is harmless
        }
      }
    }
  }

  /** This report with one more note. */
  public TopologyReport withNote(String note) {
    List<String> more = new ArrayList<>(notes);
    more.add(note);
    return new TopologyReport(gpus, gpuSource, matrix, linkSource, pci, warnings,
        List.copyOf(more), ipc, bandwidth, bandwidthUnavailable);
  }

  public String text() {
    StringBuilder b = new StringBuilder();
    b.append("GPUs (").append(gpus.size());
    if (gpuSource != null) {
      b.append(", from ").append(gpuSource);
    }
    b.append(")\n");
    for (Gpu g : gpus) {
      b.append(String.format("  %-3d %-42s %-14s numa %-3s %s%n", g.index(), g.uuid(),
          g.busId(), g.numaNode() < 0 ? "?" : g.numaNode(), g.name()));
    }
    if (matrix != null) {
      b.append("link classes (").append(linkSource).append(")\n");
      square(b, matrix.devices(), (i, j) -> matrix.link(i, j).toString(), 6);
      if (matrix.gpus().size() > 1) {
        int[] sw = matrix.switchGroups();
        int[] order = TopologyOrder.spreadAcrossSwitches(sw);
        b.append("  PCIe switch groups of the GPUs: ").append(Arrays.toString(sw))
            .append("; rank order across switches: ").append(Arrays.toString(order))
            .append('\n');
      }
    }
    if (ipc != null) {
      ipcText(b);
    }
    if (!bandwidth.isEmpty() || bandwidthUnavailable != null) {
      bandwidthText(b);
    }
    b.append("PCIe link health (GPUs and NICs)\n");
    b.append(String.format("  %-14s %-6s %-5s %-16s %-16s %-12s%n", "device", "role", "numa",
        "link now", "link max", "AER corr/nonfatal/fatal"));
    for (PciDevice d : pci) {
      if (!(d.isGpu() || d.isNic())) {
        continue;
      }
      b.append(String.format("  %-14s %-6s %-5s %-16s %-16s %s%n", d.bdf(), d.role(),
          d.numaNode() < 0 ? "?" : d.numaNode(), link(d.speed(), d.width()),
          link(d.maxSpeed(), d.maxWidth()), d.aerCorrectable() < 0 ? "not exposed"
              : d.aerCorrectable() + "/" + d.aerNonFatal() + "/" + d.aerFatal()));
    }
    long bridges = pci.stream().filter(PciDevice::isBridge).count();
    b.append("  (").append(pci.size()).append(" PCI devices read, ").append(bridges)
        .append(" of them bridges)\n");
    for (String n : notes) {
      b.append("note: ").append(n).append('\n');
    }
    for (LinkHealth.Warning w : warnings) {
      b.append(w).append('\n');
    }
    if (warnings.isEmpty()) {
      b.append("no link warnings\n");
    }
    return b.toString();
  }

  private void ipcText(StringBuilder b) {
    b.append("IPC handles opened by another process (row: owner GPU, column: opener GPU)\n");
    if (ipc.unavailable() != null) {
      b.append("  not probed: ").append(ipc.unavailable()).append('\n');
      return;
    }
    square(b, gpuNames(ipc.gpus()), (i, j) -> ipc.open()[i][j] ? "yes" : "NO", 6);
    for (int i = 0; i < ipc.gpus(); i++) {
      for (int j = 0; j < ipc.gpus(); j++) {
        if (ipc.error()[i][j] != null) {
          b.append("  GPU").append(i).append(" -> GPU").append(j).append(": ")
              .append(ipc.error()[i][j]).append('\n');
        }
      }
    }
  }

  private void bandwidthText(StringBuilder b) {
    b.append("measured copy bandwidth (row: source GPU, column: destination GPU; diagonal: "
        + "copy within the GPU)\n  ").append(BandwidthMatrix.UNIT).append('\n');
    if (bandwidthUnavailable != null) {
      b.append("  not measured: ").append(bandwidthUnavailable).append('\n');
    }
    boolean staged = false;
    for (BandwidthMatrix m : bandwidth) {
      b.append("  ").append(size(m.bytes())).append(", ").append(m.repetitions())
          .append(" repetitions\n");
      square(b, gpuNames(m.gpus()), (i, j) -> Double.isNaN(m.gbps()[i][j]) ? "failed"
          : String.format("%.1f", m.gbps()[i][j]) + (m.peerAccess()[i][j] ? "" : "*"), 9);
      for (int i = 0; i < m.gpus(); i++) {
        for (int j = 0; j < m.gpus(); j++) {
          staged |= !m.peerAccess()[i][j];
          if (m.error()[i][j] != null) {
            b.append("  ").append(m.error()[i][j]).append('\n');
          }
        }
      }
    }
    if (staged) {
      b.append("  * no peer access between these GPUs: the driver staged the copy through host "
          + "memory\n");
    }
  }

  private static List<String> gpuNames(int n) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      names.add("GPU" + i);
    }
    return names;
  }

  /** A square table with row and column names. */
  private static void square(StringBuilder b, List<String> names,
      java.util.function.BiFunction<Integer, Integer, String> cell, int width) {
    String f = "%-" + width + "s";
    b.append("  ").append(String.format(f, ""));
    for (String d : names) {
      b.append(String.format(f, d));
    }
    b.append('\n');
    for (int i = 0; i < names.size(); i++) {
      b.append("  ").append(String.format(f, names.get(i)));
      for (int j = 0; j < names.size(); j++) {
        b.append(String.format(f, cell.apply(i, j)));
      }
      b.append('\n');
    }
  }

  private static String size(long bytes) {
    return bytes % (1 << 20) == 0 ? (bytes >> 20) + " MiB" : bytes % 1024 == 0
        ? (bytes >> 10) + " KiB" : bytes + " B";
  }

  private static String link(double speed, int width) {
    return speed <= 0 ? "-" : (speed == Math.rint(speed) ? String.format("%.0f", speed)
        : String.valueOf(speed)) + " GT/s x" + width;
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One line of JSON (Jackson); absent parts are null, as are unmeasured cells. */
  public String json() {
    ObjectNode o = JSON.createObjectNode();
    o.put("gpuSource", gpuSource);
    ArrayNode gs = o.putArray("gpus");
    for (Gpu g : gpus) {
      gs.addObject().put("index", g.index()).put("uuid", g.uuid()).put("busId", g.busId())
          .put("name", g.name()).put("numaNode", g.numaNode());
    }
    if (matrix == null) {
      o.putNull("links");
    } else {
      ObjectNode l = o.putObject("links").put("source", linkSource);
      ArrayNode devices = l.putArray("devices");
      matrix.devices().forEach(devices::add);
      int n = matrix.devices().size();
      grid(l.putArray("matrix"), n, (a, i, j) -> a.add(matrix.link(i, j).toString()));
    }
    if (ipc == null) {
      o.putNull("ipc");
    } else {
      ObjectNode x = o.putObject("ipc").put("unavailable", ipc.unavailable());
      grid(x.putArray("open"), ipc.gpus(), (a, i, j) -> a.add(ipc.open()[i][j]));
      grid(x.putArray("errors"), ipc.gpus(), (a, i, j) -> a.add(ipc.error()[i][j]));
    }
    if (bandwidth.isEmpty() && bandwidthUnavailable == null) {
      o.putNull("bandwidth");
    } else {
      ObjectNode bw = o.putObject("bandwidth").put("unit", BandwidthMatrix.UNIT)
          .put("unavailable", bandwidthUnavailable);
      ArrayNode ms = bw.putArray("matrices");
      for (BandwidthMatrix m : bandwidth) {
        ObjectNode mo = ms.addObject().put("bytes", m.bytes())
            .put("repetitions", m.repetitions());
        grid(mo.putArray("gbps"), m.gpus(), (a, i, j) -> {
          double v = m.gbps()[i][j];
          if (Double.isNaN(v)) {
            a.addNull();
          } else {
            a.add(BigDecimal.valueOf(v).setScale(2, RoundingMode.HALF_UP)); // as "%.2f"
          }
        });
        grid(mo.putArray("peerAccess"), m.gpus(), (a, i, j) -> a.add(m.peerAccess()[i][j]));
        grid(mo.putArray("errors"), m.gpus(), (a, i, j) -> a.add(m.error()[i][j]));
      }
    }
    ArrayNode ps = o.putArray("pci");
    for (PciDevice d : pci) {
      if (d.isGpu() || d.isNic()) {
        ps.addObject().put("bdf", d.bdf()).put("role", d.role()).put("numaNode", d.numaNode())
            .put("speedGTs", d.speed()).put("width", d.width()).put("maxSpeedGTs", d.maxSpeed())
            .put("maxWidth", d.maxWidth()).put("aerCorrectable", d.aerCorrectable());
      }
    }
    ArrayNode ws = o.putArray("warnings");
    warnings.forEach(w -> ws.add(w.toString()));
    ArrayNode ns = o.putArray("notes");
    notes.forEach(ns::add);
    try {
      return JSON.writeValueAsString(o);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("the report's JSON tree did not serialise", e);
    }
  }

  /** Fills an n x n array of arrays, cell by cell. */
  private interface Cell {
    void add(ArrayNode row, int i, int j);
  }

  private static void grid(ArrayNode a, int n, Cell cell) {
    for (int i = 0; i < n; i++) {
      ArrayNode row = a.addArray();
      for (int j = 0; j < n; j++) {
        cell.add(row, i, j);
      }
    }
  }

  /** Reads a file, or returns null for a null path. */
  public static String read(Path p) throws IOException {
    return p == null ? null : Files.readString(p);
  }
}

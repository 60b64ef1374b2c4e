package io.treeline.topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A node's GPUs, their link classes, their PCIe link health and the warnings, from live
 * sources ({@code nvidia-smi}, {@code /sys}) or captured ones (a sysfs tree, a
 * {@code nvidia-smi topo -m} text, a GPU list CSV), as {@code ./treeline topo} prints it and the
 * executor plugin logs it.
 */
public record TopologyReport(List<Gpu> gpus, TopoMatrix matrix, List<PciDevice> pci,
    List<LinkHealth.Warning> warnings, List<String> notes) {

  /** A GPU by its stable identity: UUID and PCI bus id, never the CUDA ordinal. */
  public record Gpu(int index, String uuid, String busId, String name, int numaNode) {
  }

  /**
   * @param sysfs the sysfs root (/sys live)
   * @param topoText nvidia-smi topo -m output, or null to run nvidia-smi (if present)
   * @param gpuCsv nvidia-smi --query-gpu=index,uuid,pci.bus_id,name CSV, or null to run it
   * @param baseline a captured sysfs tree to compare AER counters with, or null
   */
  public static TopologyReport collect(Path sysfs, String topoText, String gpuCsv,
      Path baseline) throws IOException {
    List<String> notes = new ArrayList<>();
    boolean live = topoText == null;
    if (topoText == null) {
      topoText = run("nvidia-smi", "topo", "-m");
    }
    if (gpuCsv == null && live) {
      gpuCsv = run("nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name", "--format=csv");
    }
    TopoMatrix m = null;
    if (topoText != null) {
      try {
        m = TopoMatrix.parse(topoText);
      } catch (IllegalArgumentException e) {
        notes.add("nvidia-smi topo -m output not understood: " + e.getMessage());
      }
    } else {
      notes.add("nvidia-smi not found: no GPU link matrix (this machine has no NVIDIA driver)");
    }
    List<PciDevice> pci = PciDevice.scan(sysfs);
    if (pci.isEmpty()) {
      notes.add("no PCI devices readable under " + sysfs.resolve("bus/pci/devices"));
    }
    Map<String, PciDevice> byBdf = new HashMap<>();
    for (PciDevice d : pci) {
      byBdf.put(d.bdf().toLowerCase(), d);
    }
    List<Gpu> gpus = new ArrayList<>();
    if (gpuCsv != null) {
      for (String line : gpuCsv.lines().skip(1).toList()) {
        String[] c = line.split(",\\s*");
        if (c.length >= 4 && c[0].trim().matches("\\d+")) {
          String bdf = normalizeBusId(c[2].trim());
          PciDevice d = byBdf.get(bdf);
          gpus.add(new Gpu(Integer.parseInt(c[0].trim()), c[1].trim(), bdf, c[3].trim(),
              d == null ? -1 : d.numaNode()));
        }
      }
    }
    if (gpus.isEmpty()) {
      int i = 0;
      for (PciDevice d : pci) {
        if (d.isGpu()) {
          gpus.add(new Gpu(i++, "?", d.bdf(), "NVIDIA GPU (no nvidia-smi: UUID unknown)",
              d.numaNode()));
        }
      }
    }
    if (gpus.isEmpty()) {
      notes.add("no NVIDIA GPU found: Treeline runs its host path (shared memory, TCP)");
    }
    Map<String, PciDevice> base = null;
    if (baseline != null) {
      base = new HashMap<>();
      for (PciDevice d : PciDevice.scan(baseline)) {
        base.put(d.bdf(), d);
      }
    }
    return new TopologyReport(gpus, m, pci, LinkHealth.check(pci, base), notes);
  }

  /** nvidia-smi's "00000000:3B:00.0" as sysfs names it: "0000:3b:00.0". */
  static String normalizeBusId(String id) {
    String s = id.toLowerCase();
    String[] parts = s.split(":", 2);
    if (parts.length == 2 && parts[0].length() > 4) {
      s = parts[0].substring(parts[0].length() - 4) + ":" + parts[1];
    }
    return s;
  }

  private static String run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return p.exitValue() == 0 ? out : null;
    } catch (IOException e) {
      return null; // not installed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  public String text() {
    StringBuilder b = new StringBuilder();
    b.append("GPUs (").append(gpus.size()).append(")\n");
    for (Gpu g : gpus) {
      b.append(String.format("  %-3d %-42s %-14s numa %-3s %s%n", g.index(), g.uuid(),
          g.busId(), g.numaNode() < 0 ? "?" : g.numaNode(), g.name()));
    }
    if (matrix != null) {
      b.append("link classes (nvidia-smi topo -m)\n  ").append(String.format("%-6s", ""));
      for (String d : matrix.devices()) {
        b.append(String.format("%-6s", d));
      }
      b.append('\n');
      for (int i = 0; i < matrix.devices().size(); i++) {
        b.append("  ").append(String.format("%-6s", matrix.devices().get(i)));
        for (int j = 0; j < matrix.devices().size(); j++) {
          b.append(String.format("%-6s", matrix.link(i, j)));
        }
        b.append('\n');
      }
      if (matrix.gpus().size() > 1) {
        int[] sw = matrix.switchGroups();
        int[] order = TopologyOrder.spreadAcrossSwitches(sw);
        b.append("  PCIe switch groups of the GPUs: ").append(java.util.Arrays.toString(sw))
            .append("; rank order across switches: ").append(java.util.Arrays.toString(order))
            .append('\n');
      }
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

  private static String link(double speed, int width) {
    return speed <= 0 ? "-" : (speed == Math.rint(speed) ? String.format("%.0f", speed)
        : String.valueOf(speed)) + " GT/s x" + width;
  }

  public String json() {
    StringBuilder b = new StringBuilder("{\"gpus\":[");
    for (int i = 0; i < gpus.size(); i++) {
      Gpu g = gpus.get(i);
      b.append(i == 0 ? "" : ",").append("{\"index\":").append(g.index()).append(",\"uuid\":")
          .append(q(g.uuid())).append(",\"busId\":").append(q(g.busId())).append(",\"name\":")
          .append(q(g.name())).append(",\"numaNode\":").append(g.numaNode()).append('}');
    }
    b.append("],\"links\":");
    if (matrix == null) {
      b.append("null");
    } else {
      b.append("{\"devices\":[");
      for (int i = 0; i < matrix.devices().size(); i++) {
        b.append(i == 0 ? "" : ",").append(q(matrix.devices().get(i)));
      }
      b.append("],\"matrix\":[");
      for (int i = 0; i < matrix.devices().size(); i++) {
        b.append(i == 0 ? "[" : ",[");
        for (int j = 0; j < matrix.devices().size(); j++) {
          b.append(j == 0 ? "" : ",").append(q(matrix.link(i, j).toString()));
        }
        b.append(']');
      }
      b.append("]}");
    }
    b.append(",\"pci\":[");
    boolean first = true;
    for (PciDevice d : pci) {
      if (!(d.isGpu() || d.isNic())) {
        continue;
      }
      b.append(first ? "" : ",").append("{\"bdf\":").append(q(d.bdf())).append(",\"role\":")
          .append(q(d.role())).append(",\"numaNode\":").append(d.numaNode())
          .append(",\"speedGTs\":").append(d.speed()).append(",\"width\":").append(d.width())
          .append(",\"maxSpeedGTs\":").append(d.maxSpeed()).append(",\"maxWidth\":")
          .append(d.maxWidth()).append(",\"aerCorrectable\":").append(d.aerCorrectable())
          .append('}');
      first = false;
    }
    b.append("],\"warnings\":[");
    for (int i = 0; i < warnings.size(); i++) {
      b.append(i == 0 ? "" : ",").append(q(warnings.get(i).toString()));
    }
    b.append("],\"notes\":[");
    for (int i = 0; i < notes.size(); i++) {
      b.append(i == 0 ? "" : ",").append(q(notes.get(i)));
    }
    return b.append("]}").toString();
  }

  private static String q(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** Reads a file, or returns null for a null path. */
  public static String read(Path p) throws IOException {
    return p == null ? null : Files.readString(p);
  }
}

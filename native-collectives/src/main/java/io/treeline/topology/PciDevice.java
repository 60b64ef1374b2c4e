package io.treeline.topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * One PCIe function as sysfs describes it under {@code /sys/bus/pci/devices/<bdf>}: its class,
 * NUMA node, negotiated and maximum link speed (GT/s) and width, and AER counters when the
 * kernel exposes them (-1 where absent). A captured tree (scripts/device/capture-topology.sh)
 * reads the same way.
 */
public record PciDevice(String bdf, String vendor, String pciClass, int numaNode,
    double speed, int width, double maxSpeed, int maxWidth, long aerCorrectable,
    long aerNonFatal, long aerFatal, String path) {

  public boolean isGpu() {
    return vendor.equals("0x10de") && pciClass.startsWith("0x03");
  }

  public boolean isNic() {
    return pciClass.startsWith("0x02");
  }

  public boolean isBridge() {
    return pciClass.startsWith("0x0604");
  }

  public boolean hasLink() {
    return speed > 0 && maxSpeed > 0;
  }

  public String role() {
    return isGpu() ? "GPU" : isNic() ? "NIC" : isBridge() ? "bridge" : "device";
  }

  /** Every GPU, NIC and bridge under {@code sysfsRoot}/bus/pci/devices. */
  public static List<PciDevice> scan(Path sysfsRoot) throws IOException {
    Path dir = sysfsRoot.resolve("bus").resolve("pci").resolve("devices");
    List<PciDevice> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (Stream<Path> s = Files.list(dir)) {
      for (Path d : s.sorted().toList()) {
        PciDevice p = read(d);
        if (p.isGpu() || p.isNic() || p.isBridge()) {
          out.add(p);
        }
      }
    }
    return out;
  }

  static PciDevice read(Path d) {
    String path = text(d.resolve(".path"));
    if (path.isEmpty()) {
      try {
        path = d.toRealPath().toString().replaceFirst("^/sys/devices/", "");
      } catch (IOException e) {
        path = d.getFileName().toString();
      }
    }
    return new PciDevice(d.getFileName().toString(), text(d.resolve("vendor")),
        text(d.resolve("class")), (int) number(d.resolve("numa_node")),
        speed(text(d.resolve("current_link_speed"))),
        (int) number(d.resolve("current_link_width")),
        speed(text(d.resolve("max_link_speed"))), (int) number(d.resolve("max_link_width")),
        aer(d.resolve("aer_dev_correctable")), aer(d.resolve("aer_dev_nonfatal")),
        aer(d.resolve("aer_dev_fatal")), path);
  }

  /** "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s; unknown -> 0. */
  static double speed(String s) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9.]+)\\s*GT/s")
        .matcher(s);
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  /** The TOTAL_ERR_* line of an aer_dev_* file, or the sum of its counters; -1 if absent. */
  static long aer(Path f) {
    String t = text(f);
    if (t.isEmpty()) {
      return -1;
    }
    long sum = 0;
    for (String line : t.split("\n")) {
      String[] kv = line.trim().split("\\s+");
      if (kv.length == 2 && kv[1].matches("\\d+")) {
        if (kv[0].startsWith("TOTAL_ERR")) {
          return Long.parseLong(kv[1]);
        }
        sum += Long.parseLong(kv[1]);
      }
    }
    return sum;
  }

  private static long number(Path f) {
    String t = text(f);
    try {
      return t.isEmpty() ? -1 : Long.parseLong(t.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static String text(Path f) {
    try {
      return Files.readString(f).trim();
    } catch (IOException e) {
      return "";
    }
  }
}

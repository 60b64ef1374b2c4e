package io.treeline.topology;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The PCIe links of a node's GPUs and NICs, re-read on demand and compared with how they were
 * when the monitor started: a link that trains down or starts logging AER errors while a job
 * runs is a warning then, not only at start-up. For metrics that are polled (Spark's), so each
 * call reads a few sysfs attributes per device and nothing else.
 */
public final class LinkMonitor {
  private final Path sysfs;
  private final List<String> bdfs = new ArrayList<>();
  private final Map<String, PciDevice> baseline = new HashMap<>();

  /** Watches the GPUs and NICs found under {@code sysfs} now, with their counters as baseline. */
  public LinkMonitor(Path sysfs) throws IOException {
    this.sysfs = sysfs;
    for (PciDevice d : PciDevice.scan(sysfs)) {
      if (d.isGpu() || d.isNic()) {
        bdfs.add(d.bdf());
        baseline.put(d.bdf(), d);
      }
    }
  }

  /** The watched devices' bus ids (GPUs and NICs). */
  public List<String> devices() {
    return List.copyOf(bdfs);
  }

  /** A device as it is now (its start-up state if it can no longer be read). */
  public PciDevice now(String bdf) {
    Path d = sysfs.resolve("bus").resolve("pci").resolve("devices").resolve(bdf);
    return d.toFile().isDirectory() ? PciDevice.read(d) : baseline.get(bdf);
  }

  /** Links below their maximum now, and AER counts that rose since the monitor started. */
  public List<LinkHealth.Warning> warnings() {
    List<PciDevice> now = new ArrayList<>();
    for (String bdf : bdfs) {
      now.add(now(bdf));
    }
    return LinkHealth.check(now, baseline);
  }

  /** The share of its maximum bandwidth a link runs at now, in percent (-1 without a link). */
  public static double linkPercent(PciDevice d) {
    return d.hasLink() && d.maxWidth() > 0
        ? 100 * d.speed() * d.width() / (d.maxSpeed() * d.maxWidth()) : -1;
  }
}

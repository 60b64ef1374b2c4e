package io.treeline.topology;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Link classes from the PCI tree, for nodes without nvidia-smi: where two devices meet in their
 * canonical sysfs paths ({@code /sys/bus/pci/devices/X} resolved), named as
 * {@code nvidia-smi topo -m} names it. A path reads from the host bridge down:
 *
 * <pre>
 *   /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0
 *                ^ host    ^ root port  ^ switch      ^ switch     ^ the GPU
 *                  bridge                 upstream      downstream
 * </pre>
 *
 * Two GPUs behind one switch meet at its upstream port, and the path between them crosses
 * three bridge functions (downstream, upstream, downstream): one switch, nvidia-smi's PIX
 * ("at most a single PCIe bridge"). More bridge functions than that without leaving the root
 * port (switches below switches) is PXB. Paths that part right below the host bridge (different
 * root ports) cross it: PHB. Different host bridges are NODE when they share the NUMA node, SYS
 * when the path crosses the SMP interconnect. NVLink is invisible here: nvidia-smi (or a topo
 * file) is the only source of NV#.
 *
 * <p>A pure function of path strings and NUMA nodes, so any captured tree classifies the same.
 */
public final class PciTree {
  /** Bridge functions on the path of devices behind one PCIe switch. */
  private static final int ONE_SWITCH = 3;

  private PciTree() {
  }

  /** A device as the classifier sees it: its name in the matrix, canonical path, NUMA node. */
  public record Endpoint(String name, String path, int numaNode) {
  }

  /**
   * The link class between two devices; -1 for an unknown NUMA node (no NUMA, or a firmware
   * that does not say) counts as the same node, as on a one-socket machine.
   */
  public static LinkClass classify(String pathA, int numaA, String pathB, int numaB) {
    Path a = Path.parse(pathA);
    Path b = Path.parse(pathB);
    if (a.equals(b)) {
      return LinkClass.SELF;
    }
    if (!a.hostBridge.equals(b.hostBridge)) {
      boolean sameNode = numaA < 0 || numaB < 0 || numaA == numaB;
      return new LinkClass(sameNode ? LinkClass.Kind.NODE : LinkClass.Kind.SYS, 0);
    }
    int common = 0;
    while (common < a.bdfs.size() && common < b.bdfs.size()
        && a.bdfs.get(common).equals(b.bdfs.get(common))) {
      common++;
    }
    if (common == 0) {
      return new LinkClass(LinkClass.Kind.PHB, 0); // different root ports of one host bridge
    }
    if (common == a.bdfs.size() || common == b.bdfs.size()) {
      // one device is a bridge above the other: the path crosses the bridges between them
      int between = Math.abs(a.bdfs.size() - b.bdfs.size()) - 1;
      return new LinkClass(between + 1 <= ONE_SWITCH ? LinkClass.Kind.PIX : LinkClass.Kind.PXB,
          0);
    }
    // bridges strictly between the two devices: each side's below the meeting point, and it
    int bridges = (a.bdfs.size() - common - 1) + (b.bdfs.size() - common - 1) + 1;
    return new LinkClass(bridges <= ONE_SWITCH ? LinkClass.Kind.PIX : LinkClass.Kind.PXB, 0);
  }

  /**
   * The matrix of every pair, in the order given (nvidia-smi's layout: GPUs, then NICs), with
   * each device's NUMA node in the affinity column.
   */
  public static TopoMatrix matrix(List<Endpoint> devices) {
    int n = devices.size();
    LinkClass[][] links = new LinkClass[n][n];
    List<String> names = new ArrayList<>();
    List<String> cpu = new ArrayList<>();
    List<String> numa = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Endpoint a = devices.get(i);
      names.add(a.name());
      cpu.add("");
      numa.add(a.numaNode() < 0 ? "N/A" : Integer.toString(a.numaNode()));
      for (int j = 0; j < n; j++) {
        Endpoint b = devices.get(j);
        links[i][j] = i == j ? LinkClass.SELF
            : classify(a.path(), a.numaNode(), b.path(), b.numaNode());
      }
    }
    return new TopoMatrix(List.copyOf(names), links, List.copyOf(cpu), List.copyOf(numa));
  }

  /** A canonical path split into its host bridge ("pci0000:00") and the BDFs below it. */
  private record Path(String hostBridge, List<String> bdfs) {
    static Path parse(String path) {
      String p = path.trim().toLowerCase();
      p = p.replaceFirst("^/sys/devices/", "").replaceFirst("^/", "");
      List<String> parts = new ArrayList<>(Arrays.asList(p.split("/")));
      parts.removeIf(String::isEmpty);
      if (parts.isEmpty() || !parts.get(0).startsWith("pci")) {
        throw new IllegalArgumentException("'" + path + "' is not a canonical PCI sysfs path "
            + "(/sys/devices/pciDDDD:BB/DDDD:BB:DD.F/...): resolve /sys/bus/pci/devices/X");
      }
      List<String> bdfs = new ArrayList<>();
      for (String s : parts.subList(1, parts.size())) {
        if (!s.matches("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]")) {
          break; // e.g. a virtual function's or a driver's subdirectory: not a bridge level
        }
        bdfs.add(s);
      }
      if (bdfs.isEmpty()) {
        throw new IllegalArgumentException("'" + path + "' names a host bridge, no device");
      }
      return new Path(parts.get(0), List.copyOf(bdfs));
    }
  }
}

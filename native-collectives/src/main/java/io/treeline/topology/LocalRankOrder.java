package io.treeline.topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * The order of one node's ranks by where their GPUs sit on the PCI tree: round-robin over PCIe
 * switches ({@link TopologyOrder}), so that neighbours of a chain and the ranks reading each
 * other's slices at the same time are behind different switches (seed 004, 4.3). Every rank of
 * the node computes it from the same sysfs and the same bus ids, so all agree. Where the order
 * cannot matter or cannot be known, it is the given order: ranks sharing a GPU, or a PCI tree
 * that cannot be read (no sysfs, a container that hides it).
 */
public final class LocalRankOrder {
  private LocalRankOrder() {
  }

  /**
   * @param busIds the PCI bus id of each rank's GPU, in the ranks' given order
   * @param resolve a bus id's place on the PCI tree ({@link #sysfs})
   * @return positions: {@code order[p]} is the given index of the rank at position p
   */
  public static int[] order(List<String> busIds, Function<String, Optional<PciTree.Endpoint>>
      resolve) {
    int n = busIds.size();
    int[] identity = new int[n];
    for (int i = 0; i < n; i++) {
      identity[i] = i;
    }
    if (n < 3 || new HashSet<>(busIds).size() != n) {
      return identity; // two ranks have one order either way; shared GPUs have no switches
    }
    List<PciTree.Endpoint> eps = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Optional<PciTree.Endpoint> e = resolve.apply(busIds.get(i));
      if (e.isEmpty()) {
        return identity;
      }
      // named as the matrix names GPUs, so that switchGroups() counts them
      eps.add(new PciTree.Endpoint("GPU" + i, e.get().path(), e.get().numaNode()));
    }
    return TopologyOrder.spreadAcrossSwitches(PciTree.matrix(eps).switchGroups());
  }

  /** A bus id ("0000:3b:00.0") on this machine's PCI tree, from /sys/bus/pci/devices. */
  public static Optional<PciTree.Endpoint> sysfs(String busId) {
    Path dev = Path.of("/sys/bus/pci/devices", busId);
    try {
      String path = dev.toRealPath().toString();
      int numa = -1;
      Path numaFile = dev.resolve("numa_node");
      if (Files.isReadable(numaFile)) {
        numa = Integer.parseInt(Files.readString(numaFile).trim());
      }
      return Optional.of(new PciTree.Endpoint(busId, path, numa));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }
}

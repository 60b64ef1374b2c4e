package io.treeline.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The order in which a node's ranks take their local indices, from their GPUs' PCI tree. */
class LocalRankOrderTest {
  private static Map<String, PciTree.Endpoint> fixture() throws IOException {
    Map<String, PciTree.Endpoint> byBus = new HashMap<>();
    for (String line : TopologyTest.resource("two-switches-pcitree.txt").lines().toList()) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.trim().split("\\s+");
      String path = f[2];
      String bus = path.substring(path.lastIndexOf('/') + 1);
      byBus.put(bus, new PciTree.Endpoint(bus, path, Integer.parseInt(f[1])));
    }
    return byBus;
  }

  @Test
  void eightGpusBehindTwoSwitchesAlternateBetweenTheSwitches() throws IOException {
    Map<String, PciTree.Endpoint> tree = fixture();
    List<String> buses = new ArrayList<>(List.of("0000:03:00.0", "0000:04:00.0", "0000:05:00.0",
        "0000:06:00.0", "0000:83:00.0", "0000:84:00.0", "0000:85:00.0", "0000:86:00.0"));
    int[] order = LocalRankOrder.order(buses, b -> Optional.ofNullable(tree.get(b)));
    // position p holds the rank given at order[p]: switch A, switch B, switch A, ...
    assertArrayEquals(new int[] {0, 4, 1, 5, 2, 6, 3, 7}, order);
  }

  @Test
  void ranksSharingAGpuOrAnUnreadableTreeKeepTheirOrder() throws IOException {
    Map<String, PciTree.Endpoint> tree = fixture();
    assertArrayEquals(new int[] {0, 1, 2, 3}, LocalRankOrder.order(List.of("0000:03:00.0",
        "0000:03:00.0", "0000:83:00.0", "0000:83:00.0"), b -> Optional.ofNullable(tree.get(b))));
    assertArrayEquals(new int[] {0, 1, 2}, LocalRankOrder.order(List.of("0000:03:00.0",
        "0000:04:00.0", "0000:99:00.0"), b -> Optional.ofNullable(tree.get(b))));
  }
}

package io.treeline.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Link classes from canonical sysfs paths, as nvidia-smi topo -m would name them. */
class TopologyPciTreeTest {
  /** A fixture of "NAME NUMA PATH" lines. */
  static List<PciTree.Endpoint> endpoints(String resource) throws IOException {
    List<PciTree.Endpoint> out = new ArrayList<>();
    for (String line : TopologyTest.resource(resource).lines().toList()) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] t = line.trim().split("\\s+");
      out.add(new PciTree.Endpoint(t[0], t[2], Integer.parseInt(t[1])));
    }
    return out;
  }

  static void assertSameLinks(TopoMatrix expected, TopoMatrix actual) {
    assertEquals(expected.devices(), actual.devices());
    for (int i = 0; i < expected.devices().size(); i++) {
      for (int j = 0; j < expected.devices().size(); j++) {
        assertEquals(expected.link(i, j), actual.link(i, j), expected.devices().get(i) + " - "
            + expected.devices().get(j));
      }
    }
  }

  @Test
  void twoSwitchesOfFourGpusGiveWhatNvidiaSmiPrintsForThatBox() throws IOException {
    TopoMatrix tree = PciTree.matrix(endpoints("two-switches-pcitree.txt"));
    TopoMatrix smi = TopoMatrix.parse(TopologyTest.resource("two-switches-topo-m.txt"));
    assertSameLinks(smi, tree);
    assertEquals("1", tree.numaAffinity().get(4));
    assertArrayEquals(new int[] {0, 4, 1, 5, 2, 6, 3, 7},
        TopologyOrder.spreadAcrossSwitches(tree.switchGroups()));
  }

  @Test
  void aDualSocketBoxShowsEveryPcieClass() throws IOException {
    TopoMatrix tree = PciTree.matrix(endpoints("dual-socket-pcitree.txt"));
    // PIX: one switch; PXB: a switch below a switch; PHB: two root ports of one host bridge;
    // NODE: two host bridges of one socket; SYS: across sockets
    TopoMatrix expected = TopoMatrix.parse("""
              GPU0  GPU1  GPU2  GPU3  GPU4  GPU5  NIC0
        GPU0   X    PIX   PXB   PHB   SYS   SYS   NODE
        GPU1  PIX    X    PXB   PHB   SYS   SYS   NODE
        GPU2  PXB   PXB    X    PHB   SYS   SYS   NODE
        GPU3  PHB   PHB   PHB    X    SYS   SYS   NODE
        GPU4  SYS   SYS   SYS   SYS    X    PIX   SYS
        GPU5  SYS   SYS   SYS   SYS   PIX    X    SYS
        NIC0  NODE  NODE  NODE  NODE  SYS   SYS    X
        """);
    assertSameLinks(expected, tree);
    // GPU0 and GPU1 share a switch; every other GPU is alone behind its own
    assertArrayEquals(new int[] {0, 0, 1, 2, 3, 3}, tree.switchGroups());
  }

  @Test
  void pathsReadTheSameWithOrWithoutTheSysDevicesPrefix() {
    String a = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0";
    String b = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:09.0/0000:04:00.0";
    assertEquals(LinkClass.Kind.PIX, PciTree.classify(a, 0, b, 0).kind());
    assertEquals(LinkClass.SELF, PciTree.classify(a, 0, "/sys/devices/" + a.toUpperCase()
        .replace("PCI", "pci"), 0));
  }

  @Test
  void anUnknownNumaNodeCountsAsTheSameNodeAsOnAOneSocketMachine() {
    String a = "pci0000:00/0000:00:01.0/0000:01:00.0";
    String b = "pci0000:40/0000:40:01.0/0000:41:00.0";
    assertEquals(LinkClass.Kind.NODE, PciTree.classify(a, -1, b, -1).kind());
    assertEquals(LinkClass.Kind.NODE, PciTree.classify(a, 0, b, -1).kind());
    assertEquals(LinkClass.Kind.SYS, PciTree.classify(a, 0, b, 1).kind());
  }

  @Test
  void aPathThatIsNotCanonicalIsRefusedWithWhatToDo() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PciTree.classify("/sys/bus/pci/devices/0000:03:00.0", 0,
            "pci0000:00/0000:00:01.0", 0));
    assertEquals(true, e.getMessage().contains("resolve /sys/bus/pci/devices/X"),
        e.getMessage());
  }
}

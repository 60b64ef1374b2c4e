package io.treeline.topology;

import java.util.ArrayList;
import java.util.List;

/**
 * The device-to-device matrix of {@code nvidia-smi topo -m}: the devices (GPU0.., NIC0..) and
 * the {@link LinkClass} of every pair, plus each GPU's CPU and NUMA affinity when the output
 * has those columns. Tolerant of the legend that follows the matrix and of tab or space
 * separation.
 */
public record TopoMatrix(List<String> devices, LinkClass[][] links, List<String> cpuAffinity,
    List<String> numaAffinity) {

  public static TopoMatrix parse(String text) {
    // nvidia-smi underlines the header with ANSI escapes when it thinks it talks to a terminal
    String plain = text.replaceAll("\u001B\\[[0-9;]*m", "");
    List<String> lines = plain.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    int h = -1;
    for (int i = 0; i < lines.size() && h < 0; i++) {
      String[] t = lines.get(i).split("\\s+");
      // the header starts with GPU0 followed by device or column names; a row's second cell
      // is a link class ("X" on the diagonal)
      if (t[0].equals("GPU0") && (t.length == 1 || !isLink(t[1]))) {
        h = i;
      }
    }
    if (h < 0) {
      throw new IllegalArgumentException("no 'GPU0 ...' header line: not nvidia-smi topo -m "
          + "output");
    }
    String[] header = lines.get(h).split("\\s{1,}|\\t");
    List<String> devices = new ArrayList<>();
    for (String c : header) {
      if (c.matches("(GPU|NIC|mlx5_|NVS)\\S*\\d+")) {
        devices.add(c);
      } else {
        break;
      }
    }
    int n = devices.size();
    LinkClass[][] links = new LinkClass[n][n];
    List<String> cpu = new ArrayList<>();
    List<String> numa = new ArrayList<>();
    int row = 0;
    for (int i = h + 1; i < lines.size() && row < n; i++) {
      String[] cells = lines.get(i).split("\\s+");
      if (!cells[0].equals(devices.get(row))) {
        continue;
      }
      if (cells.length < n + 1) {
        throw new IllegalArgumentException("row " + cells[0] + " has " + (cells.length - 1)
            + " cells for " + n + " devices");
      }
      for (int j = 0; j < n; j++) {
        links[row][j] = LinkClass.parse(cells[j + 1]);
      }
      cpu.add(cells.length > n + 1 ? cells[n + 1] : "");
      numa.add(cells.length > n + 2 ? cells[n + 2] : "");
      row++;
    }
    if (row != n) {
      throw new IllegalArgumentException("the matrix has " + row + " rows for " + n
          + " devices");
    }
    return new TopoMatrix(List.copyOf(devices), links, List.copyOf(cpu), List.copyOf(numa));
  }

  private static boolean isLink(String s) {
    try {
      LinkClass.parse(s);
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  public List<Integer> gpus() {
    List<Integer> g = new ArrayList<>();
    for (int i = 0; i < devices.size(); i++) {
      if (devices.get(i).startsWith("GPU")) {
        g.add(i);
      }
    }
    return g;
  }

  public LinkClass link(int a, int b) {
    return links[a][b];
  }

  /**
   * Groups the GPUs by the PCIe switch they sit behind: GPUs joined by PIX share a switch; a
   * NIC on PIX with a GPU marks that switch too. Returns, per GPU (in {@link #gpus()} order),
   * its group number. With NVLink everywhere and no PIX information every GPU is its own group.
   */
  public int[] switchGroups() {
    List<Integer> g = gpus();
    int n = devices.size();
    int[] group = new int[n];
    java.util.Arrays.fill(group, -1);
    int next = 0;
    for (int i = 0; i < n; i++) {
      if (group[i] >= 0) {
        continue;
      }
      group[i] = next;
      java.util.ArrayDeque<Integer> q = new java.util.ArrayDeque<>(List.of(i));
      while (!q.isEmpty()) {
        int a = q.poll();
        for (int b = 0; b < n; b++) {
          if (group[b] < 0 && links[a][b].kind() == LinkClass.Kind.PIX) {
            group[b] = next;
            q.add(b);
          }
        }
      }
      next++;
    }
    int[] out = new int[g.size()];
    for (int k = 0; k < g.size(); k++) {
      out[k] = group[g.get(k)];
    }
    return out;
  }
}

package io.treeline.examples.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Draws scripts/bench/peers.sh's CSV ({@code system,dtype,ranks,bytes,iters,median_us,p99_us,
 * wrong}): {@code java ... PeersChart peers.csv peers.png "caption"}. Also prints the ratio
 * table (Treeline's median over each peer's, per size) that docs/BENCHMARKS.md quotes.
 */
public final class PeersChart {
  private PeersChart() {
  }

  public static void main(String[] args) throws IOException {
    Path csv = Path.of(args[0]);
    Path png = Path.of(args[1]);
    String caption = args.length > 2 ? args[2] : Charts.machine();
    // "K ranks dtype" -> system -> bytes -> median, in the CSV's order of systems
    Map<String, Map<String, TreeMap<Long, Double>>> med = new TreeMap<>(PeersChart::byShape);
    for (String line : Files.readAllLines(csv)) {
      String[] f = line.split(",");
      if (f.length < 8 || f[0].equals("system")) {
        continue;
      }
      med.computeIfAbsent(f[2] + " ranks " + f[1], k -> new LinkedHashMap<>())
          .computeIfAbsent(f[0], k -> new TreeMap<>())
          .put(Long.parseLong(f[3]), Double.parseDouble(f[5]));
    }
    System.out.println("# Treeline median / peer median per size (below 1: Treeline faster); "
        + "spark/treeline: how many times faster than treeAggregate");
    // one figure row per shape: the systems' medians, and each Treeline's / the faster peer's
    List<Charts.PeerGroup> groups = new ArrayList<>();
    med.forEach((shape, systems) -> {
      Charts.PeerGroup g = new Charts.PeerGroup(shape, new LinkedHashMap<>(),
          new LinkedHashMap<>());
      groups.add(g);
      systems.forEach((system, t) -> g.medians().put(system, points(t)));
      // "treeline", "treeline-registered", or a simulated-node shape "treeline-2x4"
      systems.forEach((system, t) -> {
        if (!system.startsWith("treeline")) {
          return;
        }
        TreeMap<Long, Double> spark = systems.get("spark");
        if (spark != null) {
          print("spark/" + system + " " + shape, ratio(spark, t), "%.1f");
        }
        TreeMap<Long, Double> faster = new TreeMap<>();
        for (String peer : List.of("mpi", "mpi-tcp", "gloo")) {
          TreeMap<Long, Double> p = systems.get(peer);
          if (p != null) {
            print(system + "/" + peer + " " + shape, ratio(t, p), "%.2f");
            ratio(t, p).keySet().forEach(bytes -> faster.merge(bytes, p.get(bytes), Math::min));
          }
        }
        if (!faster.isEmpty()) {
          TreeMap<Long, Double> r = ratio(t, faster);
          print(system + "/faster " + shape, r, "%.2f");
          g.ratios().put(system + " / faster peer", points(r));
        }
      });
    });
    List<Path> out = Charts.peers("Allreduce side by side: Treeline, Open MPI, Gloo (median)",
        caption, groups, GOAL, png);
    System.out.println("# wrote " + new ArrayList<>(out));
  }

  /** {@code a / b} at every size both have, where {@code b} is positive. */
  private static TreeMap<Long, Double> ratio(TreeMap<Long, Double> a, TreeMap<Long, Double> b) {
    TreeMap<Long, Double> r = new TreeMap<>();
    a.forEach((bytes, x) -> {
      Double y = b.get(bytes);
      if (y != null && y > 0) {
        r.put(bytes, x / y);
      }
    });
    return r;
  }

  /** "label: 8B=2.00 4K=0.50": the ratio rows docs/BENCHMARKS.md quotes. */
  private static void print(String label, TreeMap<Long, Double> r, String format) {
    StringBuilder row = new StringBuilder(label + ":");
    r.forEach((bytes, x) -> row.append(String.format(java.util.Locale.ROOT, " %s=" + format,
        Charts.sizeLabel(bytes), x)));
    System.out.println(row);
  }

  /** The goal: Treeline's median at most this times the faster peer's. */
  static final double GOAL = 0.9;

  /** "K ranks dtype" ordered by type, then by K. */
  private static int byShape(String a, String b) {
    String[] x = a.split(" ");
    String[] y = b.split(" ");
    int c = x[x.length - 1].compareTo(y[y.length - 1]);
    return c != 0 ? c : Integer.compare(Integer.parseInt(x[0]), Integer.parseInt(y[0]));
  }

  private static double[][] points(TreeMap<Long, Double> m) {
    double[][] p = new double[2][m.size()];
    int i = 0;
    for (Map.Entry<Long, Double> e : m.entrySet()) {
      p[0][i] = e.getKey();
      p[1][i++] = e.getValue();
    }
    return p;
  }
}

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
    // series "system K dtype" -> bytes -> median
    Map<String, TreeMap<Long, Double>> med = new LinkedHashMap<>();
    for (String line : Files.readAllLines(csv)) {
      String[] f = line.split(",");
      if (f.length < 8 || f[0].equals("system")) {
        continue;
      }
      med.computeIfAbsent(f[0] + " " + f[2] + " ranks " + f[1], k -> new TreeMap<>())
          .put(Long.parseLong(f[3]), Double.parseDouble(f[5]));
    }
    // one figure row per "K ranks dtype": the systems' medians, Treeline's / the faster peer's
    Map<String, Charts.PeerGroup> groups = new TreeMap<>(PeersChart::byShape);
    for (Map.Entry<String, TreeMap<Long, Double>> e : med.entrySet()) {
      String system = e.getKey().substring(0, e.getKey().indexOf(' '));
      String rest = e.getKey().substring(system.length() + 1);
      groups.computeIfAbsent(rest, k -> new Charts.PeerGroup(k, new LinkedHashMap<>(),
          new LinkedHashMap<>())).medians().put(system, points(e.getValue()));
    }
    System.out.println("# Treeline median / peer median per size (below 1: Treeline faster); "
        + "spark/treeline: how many times faster than treeAggregate");
    for (Map.Entry<String, TreeMap<Long, Double>> e : med.entrySet()) {
      // "treeline 4 ranks f32", or a simulated-node shape "treeline-2x4 8 ranks f32"
      if (!e.getKey().startsWith("treeline")) {
        continue;
      }
      String system = e.getKey().substring(0, e.getKey().indexOf(' '));
      String rest = e.getKey().substring(system.length() + 1);
      TreeMap<Long, Double> spark = med.get("spark " + rest);
      if (spark != null) {
        StringBuilder row = new StringBuilder("spark/" + system + " " + rest + ":");
        e.getValue().forEach((bytes, t) -> {
          Double q = spark.get(bytes);
          if (q != null && t > 0) {
            row.append(String.format(java.util.Locale.ROOT, " %s=%.1f", Charts.sizeLabel(bytes),
                q / t));
          }
        });
        System.out.println(row);
      }
      TreeMap<Long, Double> faster = new TreeMap<>();
      for (String peer : List.of("mpi", "gloo")) {
        TreeMap<Long, Double> p = med.get(peer + " " + rest);
        if (p == null) {
          continue;
        }
        StringBuilder row = new StringBuilder(system + "/" + peer + " " + rest + ":");
        e.getValue().forEach((bytes, t) -> {
          Double q = p.get(bytes);
          if (q != null && q > 0) {
            faster.merge(bytes, q, Math::min);
            row.append(String.format(java.util.Locale.ROOT, " %s=%.2f", Charts.sizeLabel(bytes),
                t / q));
          }
        });
        System.out.println(row);
      }
      if (!faster.isEmpty()) {
        TreeMap<Long, Double> r = new TreeMap<>();
        StringBuilder row = new StringBuilder(system + "/faster " + rest + ":");
        faster.forEach((bytes, q) -> {
          double t = e.getValue().get(bytes);
          r.put(bytes, t / q);
          row.append(String.format(java.util.Locale.ROOT, " %s=%.2f", Charts.sizeLabel(bytes),
              t / q));
        });
        System.out.println(row);
        groups.get(rest).ratios().put(system + " / faster peer", points(r));
      }
    }
    List<Path> out = Charts.peers("Allreduce side by side: Treeline, Open MPI, Gloo (median)",
        caption, new ArrayList<>(groups.values()), GOAL, png);
    System.out.println("# wrote " + new ArrayList<>(out));
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

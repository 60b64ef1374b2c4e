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
    Map<String, double[][]> medians = new LinkedHashMap<>();
    Map<String, double[][]> ratios = new LinkedHashMap<>();
    med.forEach((k, v) -> medians.put(k, points(v)));
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
      for (String peer : List.of("mpi", "gloo")) {
        TreeMap<Long, Double> p = med.get(peer + " " + rest);
        if (p == null) {
          continue;
        }
        TreeMap<Long, Double> r = new TreeMap<>();
        StringBuilder row = new StringBuilder(system + "/" + peer + " " + rest + ":");
        e.getValue().forEach((bytes, t) -> {
          Double q = p.get(bytes);
          if (q != null && q > 0) {
            r.put(bytes, t / q);
            row.append(String.format(java.util.Locale.ROOT, " %s=%.2f", Charts.sizeLabel(bytes),
                t / q));
          }
        });
        System.out.println(row);
        if (!r.isEmpty()) {
          ratios.put((system.equals("treeline") ? "" : system) + "/" + peer + " " + rest,
              points(r));
        }
      }
    }
    List<Path> out = Charts.peers("Allreduce side by side: Treeline, Open MPI, Gloo (median)",
        caption, medians, ratios, png);
    System.out.println("# wrote " + new ArrayList<>(out));
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

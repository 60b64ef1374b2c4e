package io.treeline.examples.cli;

import io.treeline.gpu.DeviceBench;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code ./treeline bench --device}: the GPU allreduce benchmark ({@link DeviceBench}: k ranks
 * as processes or as threads on this machine's GPUs, one-shot / two-shot / auto, nccl-tests
 * columns), then one PNG per way of running the ranks (busbw against size, a line per ranks x
 * algorithm) next to the CSV. {@code --from-csv FILE} only draws the plots of a CSV written
 * earlier, e.g. on a GPU machine without java.desktop.
 */
final class DeviceBenchCommand {
  private DeviceBenchCommand() {
  }

  static int run(String[] argv, PrintStream out) throws Exception {
    Args a = new Args("bench --device", "GPU allreduce benchmark over CUDA IPC, nccl-tests "
        + "style: for each rank count, the ranks run as separate JVMs on this machine's GPUs "
        + "(--gpus 1: all on GPU 0)\nor as threads of one JVM (--threads); f32 sum on the "
        + "registered buffers, every result checked.")
        .option("ranks", "LIST", "2,4,8", "rank counts to run, e.g. 2,4,8")
        .option("gpus", "G", "1", "GPUs to spread the ranks over (1: they share GPU 0)")
        .option("threads", "0/1", "0", "1: ranks as threads of this JVM (one CUDA context)")
        .option("algo", "LIST", "oneshot,twoshot,auto", "comma list of oneshot, twoshot, auto")
        .option("min-bytes", "SIZE", "8", "smallest message (-b)")
        .option("max-bytes", "SIZE", "1G", "largest message (-e)")
        .option("factor", "F", "2", "size multiplier between rows (-f)")
        .option("iters", "N", "20", "timed iterations per size (-n); a fifth above 256 MiB")
        .option("warmup", "N", "5", "untimed iterations per size (-w)")
        .option("out", "DIR", "out/bench-device", "folder for bench-device.csv and the plots")
        .option("from-csv", "FILE", "", "only draw the plots of this CSV");
    a.alias("b", "min-bytes").alias("e", "max-bytes").alias("f", "factor").alias("n", "iters")
        .alias("w", "warmup");
    if (!a.parse(argv)) {
      return 0;
    }
    Path dir = Path.of(a.get("out"));
    Path csv;
    if (!a.get("from-csv").isEmpty()) {
      csv = Path.of(a.get("from-csv"));
    } else {
      io.treeline.kernels.GpuDevices.Listing gpus = io.treeline.kernels.GpuDevices.list();
      if (!gpus.available() || gpus.gpus().isEmpty()) {
        out.println("treeline bench --device: no usable GPU here ("
            + (gpus.unavailable() != null ? gpus.unavailable() : "the driver lists no device")
            + "); ./treeline bench measures the host path, and --from-csv draws a GPU "
            + "machine's results");
        return 1;
      }
      Files.createDirectories(dir);
      csv = dir.resolve("bench-device.csv");
      Files.deleteIfExists(csv);
      List<String> args = new ArrayList<>();
      for (String k : List.of("ranks", "gpus", "threads", "algo", "min-bytes", "max-bytes",
          "factor", "iters", "warmup")) {
        args.add("--" + k);
        args.add(a.get(k));
      }
      args.add("--csv");
      args.add(csv.toString());
      int rc = DeviceBench.run(args.toArray(new String[0]));
      if (rc != 0) {
        return rc;
      }
    }
    for (Path png : plot(csv, dir)) {
      out.println("# wrote " + png);
    }
    return 0;
  }

  /** One PNG per mode (processes, threads) of the CSV: busbw per size, ranks x algorithm. */
  static List<Path> plot(Path csv, Path dir) throws IOException {
    List<String> lines = Files.readAllLines(csv);
    List<String> head = List.of(lines.get(0).split(","));
    int ranks = head.indexOf("ranks");
    int mode = head.indexOf("mode");
    int bytes = head.indexOf("bytes");
    int algo = head.indexOf("algo");
    int busbw = head.indexOf("busbw_gbps");
    Map<String, LinePlot> plots = new TreeMap<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      if (f[algo].equals("auto")) {
        continue; // auto is one of the others at every size: the table says which
      }
      String m = f[mode];
      LinePlot p = plots.computeIfAbsent(m, k -> new LinePlot("Treeline GPU allreduce over CUDA "
          + "IPC, ranks as " + k + " sharing one GPU", "message size", "busbw (GB/s)"));
      p.add(f[ranks] + " ranks " + f[algo], Double.parseDouble(f[bytes]),
          Double.parseDouble(f[busbw]));
    }
    Files.createDirectories(dir);
    List<Path> written = new ArrayList<>();
    for (Map.Entry<String, LinePlot> e : plots.entrySet()) {
      Path png = dir.resolve("bench-device-" + e.getKey() + ".png");
      e.getValue().write(png);
      written.add(png);
    }
    return written;
  }
}

package io.treeline.examples.cli;

import io.treeline.gpu.DeviceBench;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./treeline bench --device}: the GPU allreduce benchmark ({@link DeviceBench}: k ranks
 * as processes or as threads on this machine's GPUs, one-shot / two-shot / auto, nccl-tests
 * columns), then one PNG per way of running the ranks (busbw against size, a line per ranks x
 * algorithm) next to the CSV. {@code --from-csv FILE} only draws the plots of a CSV written
 * earlier, e.g. on a GPU machine without java.desktop.
 */
@Command(name = "device",
    header = "GPU allreduce benchmark over CUDA IPC, nccl-tests style", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, sortOptions = false,
    description = {"GPU allreduce benchmark over CUDA IPC, nccl-tests style (./treeline bench "
        + "--device is the same): for each rank count, the ranks run as separate JVMs on this "
        + "machine's GPUs (--gpus 1: all on GPU 0) or as threads of one JVM (--threads 1); f32 "
        + "sum on the registered buffers, every result checked. Writes bench-device.csv and a "
        + "figure per way of running the ranks (time and busbw against size, a line per ranks x "
        + "algorithm). --from-csv only draws the figures of a CSV written earlier, e.g. on a GPU "
        + "machine without java.desktop."})
final class DeviceBenchCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--ranks", paramLabel = "LIST", defaultValue = "2,4,8",
      description = "rank counts to run, each 1..64, e.g. 2,4,8 (default: ${DEFAULT-VALUE})")
  String ranks;

  @Option(names = "--gpus", paramLabel = "G", defaultValue = "1",
      description = "GPUs to spread the ranks over, 1..64; 1: they share GPU 0 "
          + "(default: ${DEFAULT-VALUE})")
  int gpus;

  @Option(names = "--threads", paramLabel = "0|1", defaultValue = "0",
      description = "1: ranks as threads of this JVM (one CUDA context) (default: "
          + "${DEFAULT-VALUE})")
  int threads;

  @Option(names = "--algo", paramLabel = "LIST", split = ",", defaultValue = "oneshot,twoshot,auto",
      description = "comma list of oneshot, twoshot, auto (default: ${DEFAULT-VALUE})")
  List<String> algos;

  @Option(names = {"-b", "--min-bytes"}, paramLabel = "SIZE", defaultValue = "8",
      converter = Units.Size.class, description = "smallest message (default: ${DEFAULT-VALUE})")
  long minBytes;

  @Option(names = {"-e", "--max-bytes"}, paramLabel = "SIZE", defaultValue = "1G",
      converter = Units.Size.class,
      description = "largest message, at most 16G (default: ${DEFAULT-VALUE})")
  long maxBytes;

  @Option(names = {"-f", "--factor"}, paramLabel = "F", defaultValue = "2",
      description = "size multiplier between rows, 2..1024 (default: ${DEFAULT-VALUE})")
  int factor;

  @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "20",
      description = "timed iterations per size, 1..1000000; a fifth above 256M "
          + "(default: ${DEFAULT-VALUE})")
  int iters;

  @Option(names = {"-w", "--warmup"}, paramLabel = "N", defaultValue = "5",
      description = "untimed iterations per size, 0..1000000 (default: ${DEFAULT-VALUE})")
  int warmup;

  @Option(names = "--out", paramLabel = "DIR", defaultValue = "out/bench-device",
      description = "folder for bench-device.csv and the figures (default: ${DEFAULT-VALUE})")
  Path dir;

  @Option(names = "--from-csv", paramLabel = "FILE",
      description = "only draw the figures of this CSV")
  Path fromCsv;

  @Option(names = "--machine", paramLabel = "TEXT",
      description = "what the figures' caption names as the machine (default: this one's GPU "
          + "and CPU; with --from-csv, the CSV's file)")
  String machine;

  DeviceBenchCommand(PrintStream out) {
    this.out = out;
  }

  @Override
  public Integer call() throws Exception {
    Units.intList(spec, "--ranks", ranks, 1, 64);
    Units.range(spec, "--gpus", gpus, 1, 64);
    Units.range(spec, "--threads", threads, 0, 1);
    Units.algorithms(spec, "--algo", algos, List.of("oneshot", "twoshot", "auto"));
    Units.sizeRange(spec, "-b/--min-bytes", minBytes, 1, 16L << 30, "a GPU message");
    Units.sizeRange(spec, "-e/--max-bytes", maxBytes, 1, 16L << 30, "a GPU message");
    if (minBytes > maxBytes) {
      throw Units.usage(spec, "-b/--min-bytes " + Units.bytesText(minBytes) + " is larger than "
          + "-e/--max-bytes " + Units.bytesText(maxBytes));
    }
    Units.range(spec, "-f/--factor", factor, 2, 1024);
    Units.range(spec, "-n/--iters", iters, 1, 1_000_000);
    Units.range(spec, "-w/--warmup", warmup, 0, 1_000_000);
    Path csv;
    String where;
    if (fromCsv != null) {
      if (!Files.isReadable(fromCsv)) {
        throw Units.usage(spec, "--from-csv " + fromCsv + ": no such readable file");
      }
      csv = fromCsv;
      where = machine != null ? machine : "measured elsewhere: " + csv.getFileName();
    } else {
      io.treeline.kernels.GpuDevices.Listing listing = io.treeline.kernels.GpuDevices.list();
      if (!listing.available() || listing.gpus().isEmpty()) {
        out.println("treeline bench --device: no usable GPU here ("
            + (listing.unavailable() != null ? listing.unavailable()
                : "the driver lists no device")
            + "); ./treeline bench measures the host path, and --from-csv draws a GPU "
            + "machine's results");
        return 1;
      }
      where = machine != null ? machine : listing.gpus().get(0).name() + " x"
          + listing.gpus().size() + ", " + Charts.machine();
      Files.createDirectories(dir);
      csv = dir.resolve("bench-device.csv");
      Files.deleteIfExists(csv);
      List<String> args = new ArrayList<>(List.of("--ranks", ranks, "--gpus",
          Integer.toString(gpus), "--threads", Integer.toString(threads), "--algo",
          String.join(",", algos), "--min-bytes", Long.toString(minBytes), "--max-bytes",
          Long.toString(maxBytes), "--factor", Integer.toString(factor), "--iters",
          Integer.toString(iters), "--warmup", Integer.toString(warmup), "--csv",
          csv.toString()));
      int rc = DeviceBench.run(args.toArray(new String[0]));
      if (rc != 0) {
        return rc;
      }
    }
    for (Path f : plot(csv, dir, where)) {
      out.println("# wrote " + f);
    }
    return 0;
  }

  /**
   * One figure per mode (processes, threads) of the CSV: time and busbw per size, a line per
   * ranks x algorithm; PNG and SVG.
   */
  static List<Path> plot(Path csv, Path dir, String machine) throws IOException {
    List<String> lines = Files.readAllLines(csv);
    if (lines.isEmpty()) {
      throw new IOException(csv + ": empty, not a bench-device CSV");
    }
    List<String> head = List.of(lines.get(0).split(","));
    int ranks = head.indexOf("ranks");
    int mode = head.indexOf("mode");
    int bytes = head.indexOf("bytes");
    int algo = head.indexOf("algo");
    int time = head.indexOf("time_us");
    int busbw = head.indexOf("busbw_gbps");
    if (Math.min(Math.min(ranks, mode), Math.min(Math.min(bytes, algo), Math.min(time, busbw)))
        < 0) {
      throw new IOException(csv + ": not a bench-device CSV (its header lacks one of ranks, "
          + "mode, bytes, algo, time_us, busbw_gbps)");
    }
    Map<String, Map<String, List<Charts.SizePoint>>> modes = new TreeMap<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      if (f.length < head.size() || f[algo].equals("auto")) {
        continue; // auto is one of the others at every size: the table says which
      }
      try {
        modes.computeIfAbsent(f[mode], k -> new LinkedHashMap<>())
            .computeIfAbsent(f[ranks] + " ranks " + f[algo], k -> new ArrayList<>())
            .add(new Charts.SizePoint(Long.parseLong(f[bytes]), Double.parseDouble(f[time]),
                Double.parseDouble(f[busbw])));
      } catch (NumberFormatException e) {
        throw new IOException(csv + ": not a number in line '" + line + "'", e);
      }
    }
    if (modes.isEmpty()) {
      throw new IOException(csv + ": no measurements to plot");
    }
    List<Path> written = new ArrayList<>();
    for (Map.Entry<String, Map<String, List<Charts.SizePoint>>> e : modes.entrySet()) {
      written.addAll(Charts.bandwidth("Treeline GPU allreduce over CUDA IPC, ranks as "
          + e.getKey(), Charts.caption(machine, "./treeline bench --device"), e.getValue(),
          dir.resolve("bench-device-" + e.getKey() + ".png")));
    }
    return written;
  }
}

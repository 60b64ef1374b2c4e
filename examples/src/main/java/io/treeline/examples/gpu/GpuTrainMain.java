package io.treeline.examples.gpu;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.examples.mnist.FashionMnist;
import io.treeline.examples.mnist.Trainer;
import io.treeline.kernels.GpuDevices;
import jcuda.driver.JCudaDriver;
import io.treeline.launch.ProcessLauncher;
import io.treeline.gpu.DeviceCommunicator;
import io.treeline.gpu.DeviceOptions;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The GPU trainer without Spark and without the command line's dependencies: what
 * {@code scripts/device/run-train-gpu.sh} runs on the GPU machine, which carries no Spark.
 *
 * <pre>
 * GpuTrainMain [--ranks K] [--mode threads|processes] [--overlap on|off] [--gemm auto|wgmma|wmma] [--epochs E]
 *     [--batch B] [--hidden 256,128] [--lr R] [--momentum M] [--limit N] [--data DIR]
 *     [--csv FILE] [--label TEXT]
 * </pre>
 *
 * <p>{@code threads}: K ranks as threads of this JVM on GPU rank mod GPUs (one context, no IPC);
 * {@code processes}: K JVMs started by {@link ProcessLauncher} (CUDA IPC; several on one GPU are
 * time-sliced unless CUDA MPS runs). Rank 0 prints the per-epoch lines, a {@code summary} line
 * (mean over the epochs after the first, which carries the JIT and the first launches), and
 * appends one CSV row per epoch to {@code --csv}.
 */
public final class GpuTrainMain {
  private GpuTrainMain() {
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> a = parse(argv);
    Trainer.Options d = Trainer.Options.defaults();
    Trainer.Options t = new Trainer.Options(hidden(a.getOrDefault("hidden", "256,128")),
        Integer.parseInt(a.getOrDefault("epochs", Integer.toString(d.epochs()))),
        Integer.parseInt(a.getOrDefault("batch", Integer.toString(d.batch()))),
        Float.parseFloat(a.getOrDefault("lr", Float.toString(d.lr()))),
        Float.parseFloat(a.getOrDefault("momentum", Float.toString(d.momentum()))),
        d.lrDecay(), d.seed(), Integer.parseInt(a.getOrDefault("limit", "0")));
    String overlap = a.getOrDefault("overlap", "on");
    if (!overlap.equals("on") && !overlap.equals("off")) {
      throw new IllegalArgumentException("--overlap on|off, not " + overlap);
    }
    GpuTrainOptions o = new GpuTrainOptions(t, a.getOrDefault("data",
        FashionMnist.DEFAULT_DIR.toString()), overlap.equals("on"), -1,
        a.getOrDefault("gemm", "auto"));
    int ranks = Integer.parseInt(a.getOrDefault("ranks", "1"));
    String mode = a.getOrDefault("mode", "threads");
    String csv = a.get("csv");
    String label = a.getOrDefault("label", "");
    PrintStream out = System.out;
    if (System.getenv(TcpStoreBootstrap.RANK) != null) { // one rank of a processes run
      GpuTrainer.Outcome r = run(o, out);
      if (Integer.parseInt(System.getenv(TcpStoreBootstrap.RANK)) == 0) {
        report(r, "processes", label, csv, o, out);
      }
      System.exit(0);
    }
    String why = GpuTrainer.unavailable();
    if (why != null) {
      out.println("no GPU to train on: " + why);
      System.exit(2);
    }
    switch (mode) {
      case "threads" -> threads(ranks, o, label, csv, out);
      case "processes" -> processes(ranks, argv, out);
      default -> throw new IllegalArgumentException("--mode threads|processes, not " + mode);
    }
    System.exit(0);
  }

  /**
   * Under {@code ./treeline run} (TREELINE_RANK, TREELINE_WORLD_SIZE, TREELINE_MASTER_ADDR,
   * TREELINE_MASTER_PORT set): joins the job, trains, returns rank 0's figures (the others
   * return theirs, the same). Throws IllegalStateException saying why when there is no GPU.
   */
  public static GpuTrainer.Outcome run(GpuTrainOptions o, PrintStream out) throws IOException {
    String why = GpuTrainer.unavailable();
    if (why != null) {
      throw new IllegalStateException("no GPU to train on: " + why);
    }
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(120))) {
      int[] count = new int[1];
      JCudaDriver.cuDeviceGetCount(count);
      int ordinal = GpuTrainer.ordinalFor(o.ordinal(), boot.rank(), count[0]);
      FashionMnist data = FashionMnist.load(Path.of(o.data()));
      try (DeviceCommunicator comm = DeviceCommunicator.create(boot, CommConfig.DEFAULT,
          DeviceOptions.DEFAULT.withOrdinal(ordinal))) {
        boolean lead = comm.rank() == 0;
        if (lead) {
          out.printf("treeline train: %d ranks as processes on GPU %s, MLP %s, global batch "
              + "%d, %d epochs, overlap %s%n", comm.size(), comm.gpu(),
              java.util.Arrays.toString(o.train().hidden()), o.train().batch(),
              o.train().epochs(), o.overlap() ? "on" : "off");
        }
        return GpuTrainer.train(comm, data, o, lead ? out : null, null);
      }
    }
  }

  private static void threads(int k, GpuTrainOptions o, String label, String csv,
      PrintStream out) throws Exception {
    FashionMnist data = FashionMnist.load(Path.of(o.data()));
    int gpus = GpuDevices.list().gpus().size();
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    byte[] secret = ("gpu-train-" + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
    List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
    GpuTrainer.Outcome[] results = new GpuTrainer.Outcome[k];
    Thread[] ts = new Thread[k];
    for (int r = 0; r < k; r++) {
      int rank = r;
      ts[r] = new Thread(() -> {
        try (TcpStoreBootstrap boot = TcpStoreBootstrap.create(rank, k, "127.0.0.1", port,
            secret, Duration.ofSeconds(120));
            DeviceCommunicator comm = DeviceCommunicator.create(boot, CommConfig.DEFAULT,
                DeviceOptions.DEFAULT.withOrdinal(GpuTrainer.ordinalFor(o.ordinal(), rank,
                    gpus)))) {
          if (rank == 0) {
            out.printf("treeline train: %d ranks as threads on GPU %s, MLP %s, global batch "
                + "%d, %d epochs, overlap %s, sync %s%n", k, comm.gpu(),
                Arrays.toString(o.train().hidden()), o.train().batch(), o.train().epochs(),
                o.overlap() ? "on" : "off", comm.sync());
          }
          results[rank] = GpuTrainer.train(comm, data, o, rank == 0 ? out : null, null);
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "rank-" + r);
      ts[r].start();
    }
    for (Thread th : ts) {
      th.join();
    }
    if (!errors.isEmpty()) {
      errors.get(0).printStackTrace(out);
      throw new IllegalStateException(errors.size() + " of " + k + " ranks failed: "
          + errors.get(0), errors.get(0));
    }
    report(results[0], "threads", label, csv, o, out);
  }

  private static void processes(int k, String[] argv, PrintStream out) {
    List<String> main = new ArrayList<>();
    main.add(GpuTrainMain.class.getName());
    main.addAll(Arrays.asList(argv));
    List<String> jvm = new ArrayList<>(List.of("-Xmx2g"));
    jvm.addAll(ProcessLauncher.moduleOptions()); // the TMA GEMM's tensor maps
    List<ProcessLauncher.Result> rs = ProcessLauncher.run(new int[] {k}, jvm, main, Map.of(), Duration.ofMinutes(20), out, -1);
    int bad = 0;
    for (ProcessLauncher.Result r : rs) {
      if (r.exitCode() != 0) {
        bad++;
        out.println("rank " + r.rank() + " exited with " + r.exitCode());
      }
    }
    if (bad > 0) {
      throw new IllegalStateException(bad + " of " + k + " rank processes failed");
    }
  }

  private static void report(GpuTrainer.Outcome r, String mode, String label, String csv,
      GpuTrainOptions o, PrintStream out) throws IOException {
    List<GpuTrainer.GpuEpoch> es = r.epochs();
    int from = es.size() > 1 ? 1 : 0;
    double step = 0;
    double sps = 0;
    double share = 0;
    for (int i = from; i < es.size(); i++) {
      step += es.get(i).stepMillis();
      sps += es.get(i).epoch().samplesPerSecond();
      share += es.get(i).epoch().allReduceShare();
    }
    int n = es.size() - from;
    Trainer.Epoch lastEpoch = es.get(es.size() - 1).epoch();
    out.printf("summary %s ranks=%d mode=%s overlap=%s hidden=%s batch=%d epochs=%d "
        + "step_ms=%.4f samples_per_s=%.0f allreduce_share=%.3f test_acc=%.4f gemm=%s gpu=%s%n",
        label, r.ranks(), mode, r.overlap() ? "on" : "off",
        Arrays.toString(o.train().hidden()).replace(" ", ""), o.train().batch(),
        es.size(), step / n, sps / n, share / n, lastEpoch.testAccuracy(),
        r.gemm().split(" ")[0], r.gpu());
    if (csv != null) {
      Path p = Path.of(csv);
      StringBuilder sb = new StringBuilder();
      if (!Files.exists(p)) {
        sb.append("label,ranks,mode,overlap,hidden,batch,epoch,loss,train_accuracy,"
            + "test_accuracy,samples_per_second,allreduce_share,epoch_seconds,step_ms\n");
      }
      for (GpuTrainer.GpuEpoch g : es) {
        Trainer.Epoch e = g.epoch();
        sb.append(String.format("%s,%d,%s,%s,%s,%d,%d,%.5f,%.5f,%.5f,%.1f,%.4f,%.3f,%.4f%n",
            label, r.ranks(), mode, r.overlap() ? "on" : "off",
            Arrays.toString(o.train().hidden()).replaceAll("[\\[\\] ]", "").replace(",", "-"),
            o.train().batch(), e.epoch(), e.loss(), e.trainAccuracy(), e.testAccuracy(),
            e.samplesPerSecond(), e.allReduceShare(), e.seconds(), g.stepMillis()));
      }
      Files.writeString(p, sb, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
  }

  private static int[] hidden(String s) {
    return Arrays.stream(s.split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
  }

  private static Map<String, String> parse(String[] argv) {
    Map<String, String> m = new LinkedHashMap<>();
    List<String> known = List.of("ranks", "mode", "overlap", "gemm", "epochs", "batch", "hidden", "lr",
        "momentum", "limit", "data", "csv", "label");
    for (int i = 0; i < argv.length; i++) {
      String k = argv[i];
      if (!k.startsWith("--") || !known.contains(k.substring(2)) || i + 1 >= argv.length) {
        throw new IllegalArgumentException("usage: GpuTrainMain [--" + String.join(" V] [--",
            known) + " V]; got '" + k + "'");
      }
      m.put(k.substring(2), argv[++i]);
    }
    return m;
  }
}

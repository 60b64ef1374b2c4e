package io.treeline.examples.cli;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.GpuBinding;
import io.treeline.barrier.Treeline;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.core.Communicator;
import io.treeline.core.DeviceCommunicator;
import io.treeline.examples.gpu.GpuTrainOptions;
import io.treeline.examples.gpu.GpuTrainer;
import io.treeline.examples.mnist.FashionMnist;
import io.treeline.examples.mnist.MllibBaseline;
import io.treeline.examples.mnist.Trainer;
import io.treeline.spark.TreelinePlugin;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./treeline train}: data-parallel Fashion-MNIST training in a Spark barrier stage
 * (embedded {@code local[N]} unless {@code --master} says otherwise), one rank per partition,
 * gradients averaged by Treeline. Under {@code ./treeline run} (TREELINE_RANK set) the same
 * loop runs over plain processes, without Spark.
 */
@Command(name = "train",
    header = "Data-parallel Fashion-MNIST training in a Spark barrier stage (the main job)", mixinStandardHelpOptions = true,
    versionProvider = io.treeline.examples.cli.Treeline.Version.class, sortOptions = false,
    description = {"Train a 784-256-128-10 MLP on Fashion-MNIST with data-parallel SGD: one rank "
        + "per Spark partition, gradients averaged by Treeline's allreduce. On the GPU when this "
        + "machine has one (--gpu insists, --cpu declines), else on the CPU. Prints a line per "
        + "epoch, checks that the replicas ended identical, writes train.csv, train.png and "
        + "train.svg. Under ./treeline run the same loop runs over plain processes, without "
        + "Spark."},
    footer = {"", "Examples:", "  ./treeline train --install-data",
        "  ./treeline train --epochs 2 --ranks 2 --hidden 64,32",
        "  ./treeline run --nodes 2 --ranks-per-node 2 -- train --epochs 1"})
final class TrainCommand implements Callable<Integer> {
  /**
   * Where rank 0 prints its epochs: the command's own stream when the tasks run in this JVM
   * (local mode), the executor's stdout elsewhere (the field is null there).
   */
  private static volatile PrintStream localOut;

  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--ranks", paramLabel = "K", description = "ranks (barrier tasks; on the GPU, "
      + "ranks sharing this machine's GPUs), 1..64 (default: 4, or twice the cores when fewer)")
  Integer ranks;

  @Option(names = "--master", paramLabel = "URL",
      description = "Spark master (default: embedded local[K])")
  String master;

  @Option(names = "--epochs", paramLabel = "E", defaultValue = "10",
      description = "passes over the training set, 1..10000 (default: ${DEFAULT-VALUE})")
  int epochs;

  @Option(names = "--batch", paramLabel = "B", defaultValue = "128",
      description = "global batch (all ranks together), a multiple of the ranks, 1..60000 "
          + "(default: ${DEFAULT-VALUE})")
  int batch;

  @Option(names = "--lr", paramLabel = "RATE", defaultValue = "0.05",
      converter = Units.Finite.class,
      description = "learning rate, above 0 and at most 10; decays x0.85 per epoch "
          + "(default: ${DEFAULT-VALUE})")
  double lr;

  @Option(names = "--momentum", paramLabel = "M", defaultValue = "0.9",
      converter = Units.Finite.class,
      description = "SGD momentum, at least 0 and below 1 (default: ${DEFAULT-VALUE})")
  double momentum;

  @Option(names = "--hidden", paramLabel = "LIST", defaultValue = "256,128",
      description = "hidden layer sizes, 1 to 8 layers of 1..16384 units "
          + "(default: ${DEFAULT-VALUE})")
  String hidden;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "0",
      description = "use only the first N training images, at least one batch (0: all) "
          + "(default: ${DEFAULT-VALUE})")
  int limit;

  @Option(names = "--data", paramLabel = "DIR",
      defaultValue = "/usr/share/datasets/fashion-mnist",
      description = "folder with the IDX files (default: ${DEFAULT-VALUE})")
  Path dataDir;

  @Option(names = "--out", paramLabel = "DIR", defaultValue = "out/train",
      description = "folder for train.csv, train.png and train.svg (default: ${DEFAULT-VALUE})")
  Path outDir;

  @Option(names = "--install-data",
      description = "install dataset-fashion-mnist with apt-get if missing (root)")
  boolean installData;

  @Option(names = "--gpu", description = "train on the GPU, and fail saying why when there is "
      + "none (default: the GPU when there is one)")
  boolean gpu;

  @Option(names = "--cpu", description = "train on the CPU even when there is a GPU")
  boolean cpu;

  @Option(names = "--no-overlap", description = "GPU job: the last layer's allreduce waits "
      + "for the whole backward pass instead of overlapping it")
  boolean noOverlap;

  @Option(names = "--compare-mllib", description = "also train MLlib's "
      + "MultilayerPerceptronClassifier (l-bfgs and gd) on the same data and Spark context, and "
      + "print both side by side")
  boolean compareMllib;

  @Option(names = "--target", paramLabel = "ACC", defaultValue = "0.85",
      converter = Units.Finite.class, description = "test accuracy whose wall time "
          + "--compare-mllib compares, above 0 and at most 1 (default: ${DEFAULT-VALUE})")
  double target;

  @Option(names = "--mllib-budget", paramLabel = "DURATION", defaultValue = "300s",
      description = "training time each MLlib solver gets at most, e.g. 300s, 10min "
          + "(default: ${DEFAULT-VALUE})")
  Duration mllibBudget;

  TrainCommand(PrintStream out) {
    this.out = out;
  }

  /** The hyper-parameters, every one checked against its range. */
  private Trainer.Options options(int worldSize) {
    Units.range(spec, "--ranks", worldSize, 1, 64);
    Units.range(spec, "--epochs", epochs, 1, 10_000);
    Units.range(spec, "--batch", batch, 1, 60_000);
    if (batch % worldSize != 0) {
      throw Units.usage(spec, "--batch " + batch + " is not a multiple of the " + worldSize
          + " ranks (each rank takes an equal share of the global batch)");
    }
    Units.range(spec, "--lr", lr, 0, 10, true);
    if (!(momentum >= 0 && momentum < 1)) {
      throw Units.usage(spec, "--momentum must be at least 0 and below 1, not " + momentum);
    }
    int[] layers = Units.intList(spec, "--hidden", hidden, 1, 16384);
    Units.range(spec, "--hidden (layers)", layers.length, 1, 8);
    Units.range(spec, "--limit", limit, 0, Integer.MAX_VALUE);
    if (limit > 0 && limit < batch) {
      throw Units.usage(spec, "--limit " + limit + " is less than one --batch (" + batch + ")");
    }
    Units.range(spec, "--target", target, 0, 1, true);
    Units.durationRange(spec, "--mllib-budget", mllibBudget, Duration.ofSeconds(1),
        Duration.ofDays(1));
    if (gpu && cpu) {
      throw Units.usage(spec, "--gpu and --cpu exclude each other");
    }
    if (noOverlap && cpu) {
      throw Units.usage(spec, "--no-overlap is an option of the GPU job, not of --cpu");
    }
    Trainer.Options d = Trainer.Options.defaults();
    return new Trainer.Options(layers, epochs, batch, (float) lr, (float) momentum,
        d.lrDecay(), d.seed(), limit);
  }

  /** Whether to train on the GPU: --gpu insists, --cpu declines, else when there is one. */
  private boolean onGpu() {
    if (cpu) {
      return false;
    }
    String why = GpuTrainer.unavailable();
    boolean here = why == null || why.isEmpty();
    if (gpu && !here) {
      throw new IllegalStateException("no GPU to train on: " + why);
    }
    if (!here && noOverlap) {
      throw Units.usage(spec, "--no-overlap is an option of the GPU job, and there is no GPU "
          + "here (" + why + ")");
    }
    return here;
  }

  @Override
  public Integer call() throws Exception {
    boolean underRun = System.getenv(TcpStoreBootstrap.RANK) != null;
    int k = ranks != null ? ranks : Math.min(4, Runtime.getRuntime().availableProcessors() * 2);
    if (underRun) {
      String world = System.getenv(TcpStoreBootstrap.WORLD_SIZE);
      try {
        k = Integer.parseInt(world);
      } catch (NumberFormatException e) {
        throw new IllegalStateException(TcpStoreBootstrap.WORLD_SIZE + " is '" + world
            + "', not a number");
      }
    }
    Trainer.Options o = options(k);
    boolean onGpu = onGpu();
    if (installData && !Files.exists(dataDir.resolve("train-images-idx3-ubyte.gz"))) {
      installData(out);
    }
    GpuTrainOptions go = GpuTrainOptions.defaults(dataDir.toString()).withTrain(o)
        .withOverlap(!noOverlap);
    if (underRun) {
      return onGpu ? gpuProcesses(go, k) : plainProcesses(o, dataDir, outDir, out);
    }
    int ranks = k;
    String master = this.master != null ? this.master : "local[" + ranks + "]";
    FashionMnist.load(dataDir); // fail here, with the install hint, not inside a task
    SparkConf conf = new SparkConf().setAppName("treeline-fashion-mnist").setMaster(master)
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s");
    out.printf("treeline train: %d ranks on %s, %s, MLP %s, global batch %d, %d epochs, lr "
        + "%.3g, momentum %.2g%s%n", ranks, master, onGpu ? "GPU" : "CPU", hidden, o.batch(),
        o.epochs(), o.lr(), o.momentum(), onGpu ? ", overlap " + (noOverlap ? "off" : "on")
            : "");
    long t0 = System.nanoTime();
    String data = dataDir.toString();
    localOut = out;
    List<Trainer.Result> results = new ArrayList<>();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.setLogLevel("WARN");
      List<Integer> parts = new ArrayList<>();
      for (int i = 0; i < ranks; i++) {
        parts.add(i);
      }
      List<RankRun> runs = BarrierJobs.collect(sc.parallelize(parts, ranks), (p, it) -> {
        PrintStream print = localOut != null ? localOut : System.out;
        if (onGpu) {
          // the GPU Spark assigned this task (spark.task.resource.gpu.amount=1), or none
          GpuBinding.Bound bound = GpuBinding.forTask();
          DeviceCommunicator comm = Treeline.deviceCommunicator();
          boolean lead = comm.rank() == 0;
          GpuTrainer.Outcome r = GpuTrainer.train(comm, FashionMnist.load(Path.of(data)), go,
              lead ? print : null, lead ? Progress.epochs() : null);
          return List.of(new RankRun(comm.rank(), RankRun.thisExecutor(), (bound == null
              ? "no GPU assigned by Spark, CUDA ordinal 0" : bound.toString()) + ", "
              + comm.gpu(), r.result())).iterator();
        }
        Communicator comm = Treeline.communicator();
        boolean lead = comm.rank() == 0;
        Trainer.Result r = Trainer.train(comm, FashionMnist.load(Path.of(data)), o,
            lead ? print : null, lead ? Progress.epochs() : null);
        return List.of(new RankRun(comm.rank(), RankRun.thisExecutor(), "CPU", r)).iterator();
      });
      for (RankRun r : runs) {
        out.printf("rank %d: %s, %s%n", r.rank(), r.executor(), r.device());
        results.add(r.result());
      }
      for (Trainer.Result r : results) {
        if (!Arrays.equals(r.weights(), results.get(0).weights())) {
          throw new IllegalStateException("the replicas differ after training");
        }
      }
      out.printf("replicas identical on all %d ranks; %.1f s in all%n", ranks,
          (System.nanoTime() - t0) / 1e9);
      write(outDir, results.get(0).history(), ranks, onGpu ? "GPU" : "CPU", o, out);
      if (compareMllib) {
        compare(sc, FashionMnist.load(dataDir), o, ranks, target,
            (int) mllibBudget.toSeconds(), results.get(0).history(), outDir, out);
      }
    } finally {
      localOut = null;
    }
    return 0;
  }

  /** Under ./treeline run on the GPU: {@code GpuTrainMain.run}; rank 0 writes the curves. */
  private int gpuProcesses(GpuTrainOptions go, int ranks) throws IOException {
    GpuTrainer.Outcome r = io.treeline.examples.gpu.GpuTrainMain.run(go, out);
    if ("0".equals(System.getenv(TcpStoreBootstrap.RANK))) {
      write(outDir, r.result().history(), ranks, "GPU " + r.gpu(), go.train(), out);
    }
    return 0;
  }

  private static void compare(JavaSparkContext sc, FashionMnist data, Trainer.Options o,
      int ranks, double target, int budget, List<Trainer.Epoch> ours, Path outDir,
      PrintStream out) throws IOException {
    int[] layers = new int[o.hidden().length + 2];
    layers[0] = data.pixels();
    System.arraycopy(o.hidden(), 0, layers, 1, o.hidden().length);
    layers[layers.length - 1] = 10;
    out.printf("MLlib MultilayerPerceptronClassifier %s on the same %d partitions, until test "
        + "accuracy %.2f or %d s of training:%n", Arrays.toString(layers), ranks, target, budget);
    List<MllibBaseline.Outcome> mllib = new ArrayList<>();
    mllib.add(MllibBaseline.run(sc, data, layers, ranks, "l-bfgs", target, budget, 25, 0.03,
        out));
    mllib.add(MllibBaseline.run(sc, data, layers, ranks, "gd", target, budget, 25, 0.5, out));
    double oursToTarget = Double.NaN;
    for (Trainer.Epoch e : ours) {
      if (e.testAccuracy() >= target) {
        oursToTarget = e.elapsedSeconds();
        break;
      }
    }
    double oursPerPass = ours.stream().mapToDouble(Trainer.Epoch::seconds).average().orElse(0);
    double oursFinal = ours.get(ours.size() - 1).testAccuracy();
    StringBuilder t = new StringBuilder();
    t.append(String.format("%-36s %16s %16s %12s %14s%n", "", "time to " + target + " (s)",
        "s per data pass", "final acc", "vs Treeline"));
    t.append(String.format("%-36s %16s %16.2f %12.4f %14s%n", "Treeline (" + ranks
        + " ranks, minibatch SGD)", fmt(oursToTarget), oursPerPass, oursFinal, "1.00"));
    for (MllibBaseline.Outcome m : mllib) {
      t.append(String.format("%-36s %16s %16.2f %12.4f %14s%n", "MLlib MLP, " + m.solver()
          + " (treeAggregate)", fmt(m.secondsToTarget()), m.secondsPerIteration(),
          m.finalAccuracy(), Double.isNaN(m.secondsToTarget()) || Double.isNaN(oursToTarget)
              ? "not reached" : String.format("%.3f", oursToTarget / m.secondsToTarget())));
    }
    out.print(t);
    Files.writeString(outDir.resolve("compare-mllib.txt"), t);
    out.println("wrote " + outDir.resolve("compare-mllib.txt") + " (vs Treeline = Treeline's "
        + "time to the target / MLlib's)");
  }

  private static String fmt(double s) {
    return Double.isNaN(s) ? "not reached" : String.format("%.1f", s);
  }

  private static int plainProcesses(Trainer.Options o, Path dataDir, Path outDir,
      PrintStream out) throws IOException {
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(120));
        HostCommunicator comm = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      boolean lead = comm.rank() == 0;
      if (lead) {
        out.printf("treeline train: %d ranks as processes (%d node(s)), global batch %d, %d "
            + "epochs%n", comm.size(), comm.nodeCount(), o.batch(), o.epochs());
      }
      Trainer.Result r = Trainer.train(comm, FashionMnist.load(dataDir), o, lead ? out : null,
          null);
      if (lead) {
        write(outDir, r.history(), comm.size(), "CPU, processes", o, out);
      }
    }
    return 0;
  }

  /** What one barrier task reports: its rank, its executor, its device, its result. */
  record RankRun(int rank, String executor, String device, Trainer.Result result)
      implements java.io.Serializable {
    /** This JVM as "executor ID (pid P on HOST)". */
    static String thisExecutor() {
      org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.net.UnknownHostException e) {
        host = "unknown host";
      }
      return "executor " + (env == null ? "?" : env.executorId()) + " (pid "
          + ProcessHandle.current().pid() + " on " + host + ")";
    }
  }

  static void write(Path dir, List<Trainer.Epoch> h, int ranks, String where,
      Trainer.Options o, PrintStream out) throws IOException {
    Files.createDirectories(dir);
    StringBuilder csv = new StringBuilder("epoch,loss,train_accuracy,test_accuracy,"
        + "samples_per_second,allreduce_share,epoch_seconds,elapsed_seconds\n");
    for (Trainer.Epoch e : h) {
      csv.append(String.format("%d,%.5f,%.5f,%.5f,%.1f,%.4f,%.3f,%.3f%n", e.epoch(), e.loss(),
          e.trainAccuracy(), e.testAccuracy(), e.samplesPerSecond(), e.allReduceShare(),
          e.seconds(), e.elapsedSeconds()));
    }
    Files.writeString(dir.resolve("train.csv"), csv);
    Path png = dir.resolve("train.png");
    try {
      Charts.training("Fashion-MNIST MLP " + Arrays.toString(o.hidden()) + ", " + ranks
          + " ranks (" + where + "): accuracy and loss", Charts.caption(Charts.machine(),
          "global batch " + o.batch() + ", lr " + o.lr() + ", momentum " + o.momentum()), h,
          png);
      out.println("wrote " + dir.resolve("train.csv") + ", " + png + " and "
          + dir.resolve("train.svg"));
    } catch (LinkageError | java.awt.AWTError e) {
      // a runtime without java.desktop, or without the fonts or display AWT needs: the CSV
      // holds the curves (./treeline's own runtime has both)
      out.println("wrote " + dir.resolve("train.csv") + " (no plot: " + e + ")");
    }
  }

  private void installData(PrintStream out) throws IOException, InterruptedException {
    if (!"root".equals(System.getProperty("user.name"))) {
      throw Units.usage(spec, "--install-data needs root; run: sudo apt-get install "
          + "dataset-fashion-mnist");
    }
    out.println("treeline train: installing dataset-fashion-mnist with apt-get ...");
    for (List<String> cmd : List.of(List.of("apt-get", "update", "-qq"),
        List.of("apt-get", "install", "-y", "-qq", "dataset-fashion-mnist"))) {
      Process p = new ProcessBuilder(cmd).inheritIO().start();
      if (p.waitFor() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed with exit code " + p.exitValue());
      }
    }
  }
}

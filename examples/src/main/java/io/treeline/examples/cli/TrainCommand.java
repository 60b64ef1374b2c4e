package io.treeline.examples.cli;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.Treeline;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.Communicator;
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
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * {@code ./treeline train}: data-parallel Fashion-MNIST training in a Spark barrier stage
 * (embedded {@code local[N]} unless {@code --master} says otherwise), one rank per partition,
 * gradients averaged by Treeline. Under {@code ./treeline run} (TREELINE_RANK set) the same
 * loop runs over plain processes, without Spark.
 */
final class TrainCommand {
  /**
   * Where rank 0 prints its epochs: the command's own stream when the tasks run in this JVM
   * (local mode), the executor's stdout elsewhere (the field is null there).
   */
  private static volatile PrintStream localOut;

  private TrainCommand() {
  }

  static int run(String[] argv, PrintStream out) throws Exception {
    Trainer.Options d = Trainer.Options.defaults();
    Args a = new Args("train", "Train a 784-256-128-10 MLP on Fashion-MNIST with data-parallel "
        + "SGD: one rank per Spark partition, gradients\naveraged by Treeline's allreduce. "
        + "Prints a line per epoch, writes train.csv and train.png.")
        .option("ranks", "N", Integer.toString(Math.min(4,
            Runtime.getRuntime().availableProcessors() * 2)), "ranks (barrier tasks)")
        .option("master", "URL", null, "Spark master (default: embedded local[N])")
        .option("epochs", "E", Integer.toString(d.epochs()), "passes over the training set")
        .option("batch", "B", Integer.toString(d.batch()), "global batch (all ranks together)")
        .option("lr", "RATE", Float.toString(d.lr()), "learning rate (decays x" + d.lrDecay()
            + " per epoch)")
        .option("momentum", "M", Float.toString(d.momentum()), "SGD momentum")
        .option("hidden", "LIST", "256,128", "hidden layer sizes")
        .option("limit", "N", "0", "use only the first N training images (0: all)")
        .option("data", "DIR", FashionMnist.DEFAULT_DIR.toString(), "folder with the IDX files")
        .option("out", "DIR", "out/train", "folder for train.csv and train.png")
        .flag("install-data", "install dataset-fashion-mnist with apt-get if missing (root)")
        .flag("compare-mllib", "also train MLlib's MultilayerPerceptronClassifier (l-bfgs and "
            + "gd) on the same data and Spark context, and print both side by side")
        .option("target", "ACC", "0.85", "test accuracy whose wall time --compare-mllib compares")
        .option("mllib-budget", "SECONDS", "300", "training time each MLlib solver gets at most");
    if (!a.parse(argv)) {
      return 0;
    }
    Trainer.Options o = new Trainer.Options(Arrays.stream(a.get("hidden").split(","))
        .mapToInt(s -> Integer.parseInt(s.trim())).toArray(), a.getInt("epochs"),
        a.getInt("batch"), Float.parseFloat(a.get("lr")), Float.parseFloat(a.get("momentum")),
        d.lrDecay(), d.seed(), a.getInt("limit"));
    Path dataDir = Path.of(a.get("data"));
    if (a.has("install-data") && !Files.exists(dataDir.resolve("train-images-idx3-ubyte.gz"))) {
      installData(out);
    }
    Path outDir = Path.of(a.get("out"));
    if (System.getenv(TcpStoreBootstrap.RANK) != null) {
      return plainProcesses(o, dataDir, outDir, out);
    }
    int ranks = a.getInt("ranks");
    String master = a.get("master") != null ? a.get("master") : "local[" + ranks + "]";
    FashionMnist.load(dataDir); // fail here, with the install hint, not inside a task
    SparkConf conf = new SparkConf().setAppName("treeline-fashion-mnist").setMaster(master)
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s");
    out.printf("treeline train: %d ranks on %s, MLP %s, global batch %d, %d epochs, lr %.3g, "
        + "momentum %.2g%n", ranks, master, a.get("hidden"), o.batch(), o.epochs(), o.lr(),
        o.momentum());
    long t0 = System.nanoTime();
    String data = dataDir.toString();
    localOut = out;
    List<Trainer.Result> results;
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.setLogLevel("WARN");
      List<Integer> parts = new ArrayList<>();
      for (int i = 0; i < ranks; i++) {
        parts.add(i);
      }
      results = BarrierJobs.collect(sc.parallelize(parts, ranks), (p, it) -> {
        Communicator comm = Treeline.communicator();
        boolean lead = comm.rank() == 0;
        PrintStream print = localOut != null ? localOut : System.out;
        Trainer.Result r = Trainer.train(comm, FashionMnist.load(Path.of(data)), o,
            lead ? print : null, lead && System.console() != null ? System.err : null);
        return List.of(r).iterator();
      });
      for (Trainer.Result r : results) {
        if (!Arrays.equals(r.weights(), results.get(0).weights())) {
          throw new IllegalStateException("the replicas differ after training");
        }
      }
      out.printf("replicas identical on all %d ranks; %.1f s in all%n", ranks,
          (System.nanoTime() - t0) / 1e9);
      write(outDir, results.get(0).history(), ranks, out);
      if (a.has("compare-mllib")) {
        compare(sc, FashionMnist.load(dataDir), o, ranks, Double.parseDouble(a.get("target")),
            a.getInt("mllib-budget"), results.get(0).history(), outDir, out);
      }
    } finally {
      localOut = null;
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
        Communicator comm = Communicator.create(boot, CommConfig.DEFAULT)) {
      boolean lead = comm.rank() == 0;
      if (lead) {
        out.printf("treeline train: %d ranks as processes (%d node(s)), global batch %d, %d "
            + "epochs%n", comm.size(), comm.nodeCount(), o.batch(), o.epochs());
      }
      Trainer.Result r = Trainer.train(comm, FashionMnist.load(dataDir), o, lead ? out : null,
          null);
      if (lead) {
        write(outDir, r.history(), comm.size(), out);
      }
    }
    return 0;
  }

  static void write(Path dir, List<Trainer.Epoch> h, int ranks, PrintStream out)
      throws IOException {
    Files.createDirectories(dir);
    StringBuilder csv = new StringBuilder("epoch,loss,train_accuracy,test_accuracy,"
        + "samples_per_second,allreduce_share,epoch_seconds,elapsed_seconds\n");
    LinePlot acc = new LinePlot("Fashion-MNIST MLP, " + ranks + " ranks: loss and accuracy",
        "epoch", "accuracy / loss").linearX();
    for (Trainer.Epoch e : h) {
      csv.append(String.format("%d,%.5f,%.5f,%.5f,%.1f,%.4f,%.3f,%.3f%n", e.epoch(), e.loss(),
          e.trainAccuracy(), e.testAccuracy(), e.samplesPerSecond(), e.allReduceShare(),
          e.seconds(), e.elapsedSeconds()));
      acc.add("test accuracy", e.epoch(), e.testAccuracy());
      acc.add("train accuracy", e.epoch(), e.trainAccuracy());
      acc.add("loss", e.epoch(), e.loss());
    }
    Files.writeString(dir.resolve("train.csv"), csv);
    acc.write(dir.resolve("train.png"));
    out.println("wrote " + dir.resolve("train.csv") + " and " + dir.resolve("train.png"));
  }

  private static void installData(PrintStream out) throws IOException, InterruptedException {
    if (!"root".equals(System.getProperty("user.name"))) {
      throw new Args.UsageException("--install-data needs root; run: sudo apt-get install "
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

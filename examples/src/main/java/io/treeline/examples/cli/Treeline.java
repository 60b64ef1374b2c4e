package io.treeline.examples.cli;

import java.io.PrintStream;
import java.util.Arrays;

/** The {@code ./treeline} command line: one entry point, a subcommand per tool. */
public final class Treeline {
  private static final String USAGE = """
      usage: ./treeline <command> [options]

      commands:
        train   data-parallel Fashion-MNIST training in a Spark barrier stage (the main job)
        bench   allreduce benchmark, nccl-tests style table + CSV + PNG
        run     start ranks as separate JVMs on simulated nodes: run --nodes 2 -- bench
        plan    print a collective's plan (trees, per-rank steps), --json, --verify
        topo    GPUs, link classes, PCIe link health and warnings of this node
        jmh     JMH benchmark of the host reducers against memcpy

      ./treeline <command> --help shows a command's options.
      """;

  private Treeline() {
  }

  public static void main(String[] argv) {
    System.exit(run(argv, System.out, System.err));
  }

  static int run(String[] argv, PrintStream out, PrintStream err) {
    if (argv.length == 0 || argv[0].equals("--help") || argv[0].equals("-h")
        || argv[0].equals("help")) {
      out.print(USAGE);
      return argv.length == 0 ? 2 : 0;
    }
    String[] rest = Arrays.copyOfRange(argv, 1, argv.length);
    try {
      switch (argv[0]) {
        case "plan":
          return PlanCommand.run(rest, out);
        case "bench":
          return BenchCommand.run(rest, out);
        case "run":
          return RunCommand.run(rest, out);
        case "train":
          return TrainCommand.run(rest, out);
        case "topo":
          return TopoCommand.run(rest, out);
        default:
          err.print("unknown command '" + argv[0] + "'\n\n" + USAGE);
          return 2;
      }
    } catch (Args.UsageException | IllegalArgumentException e) {
      err.println("treeline " + argv[0] + ": " + e.getMessage());
      err.println("(./treeline " + argv[0] + " --help lists the options)");
      return 2;
    } catch (java.io.IOException e) {
      err.println("treeline " + argv[0] + ": " + e.getMessage());
      return 1;
    } catch (Exception e) {
      err.println("treeline " + argv[0] + " failed: " + e);
      return 1;
    }
  }
}

package io.treeline.examples.cli;

import io.treeline.launch.ProcessLauncher;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ./treeline run --nodes N --ranks-per-node G -- <command or main class> [args]}: the
 * host equivalent of torchrun. Starts N x G JVMs on simulated nodes, wires them through the TCP
 * store on rank 0, echoes rank 0's output as is and the others' prefixed, and exits with the
 * first failing rank's code.
 */
@Command(name = "run",
    header = "Start ranks as separate JVMs on simulated nodes: run --nodes 2 -- bench", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, sortOptions = false,
    description = {"Start ranks as separate JVMs on simulated nodes (TREELINE_NODE_ID), torchrun "
        + "style, and run a treeline command (bench, plan, train) or a main class in each. Rank "
        + "0's output is echoed as is, the others' only when they fail; the exit code is the "
        + "first failing rank's."},
    footer = {"", "Examples:", "  ./treeline run --nodes 2 --ranks-per-node 2 -- bench -b 8 -e 64M -f 4",
        "  ./treeline run --nodes 3 --ranks-per-node 3,1,2 -- bench -b 8 -e 16M -f 8"})
final class RunCommand implements Callable<Integer> {
  private static final Set<String> COMMANDS = Set.of("bench", "plan", "train");

  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--nodes", paramLabel = "N", defaultValue = "1",
      description = "simulated nodes, 1..64 (default: ${DEFAULT-VALUE})")
  int nodes;

  @Option(names = "--ranks-per-node", paramLabel = "G|LIST", defaultValue = "2",
      description = "ranks per node, 1..64, or a list such as 3,1,2 (one entry per node; "
          + "overrides --nodes); at most 256 ranks in all (default: ${DEFAULT-VALUE})")
  String ranksPerNode;

  @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "600s",
      description = "kill the job after this long, e.g. 90s, 10min; a plain number is seconds "
          + "(default: ${DEFAULT-VALUE})")
  Duration timeout;

  @Option(names = "--heap", paramLabel = "SIZE", defaultValue = "512M",
      converter = Units.Size.class,
      description = "-Xmx of each rank, 64M..64G (default: ${DEFAULT-VALUE})")
  long heap;

  @Option(names = "--all-output",
      description = "echo every rank's output, not only rank 0's and failures")
  boolean allOutput;

  @Parameters(paramLabel = "COMMAND", arity = "0..*",
      description = "after --: a treeline command (bench, plan, train) or a main class, and its "
          + "arguments")
  List<String> rest = new ArrayList<>();

  RunCommand(PrintStream out) {
    this.out = out;
  }

  @Override
  public Integer call() {
    int[] perNode;
    if (ranksPerNode.contains(",")) {
      perNode = Units.intList(spec, "--ranks-per-node", ranksPerNode, 1, 64);
    } else {
      Units.range(spec, "--nodes", nodes, 1, 64);
      int g = Units.intList(spec, "--ranks-per-node", ranksPerNode, 1, 64)[0];
      perNode = new int[nodes];
      Arrays.fill(perNode, g);
    }
    Units.range(spec, "ranks in all", Arrays.stream(perNode).asLongStream().sum(), 1, 256);
    Units.durationRange(spec, "--timeout", timeout, Duration.ofSeconds(1), Duration.ofDays(7));
    Units.sizeRange(spec, "--heap", heap, 64L << 20, 64L << 30, "a rank's -Xmx");
    if (rest.isEmpty()) {
      throw Units.usage(spec, "nothing to run: put the command after --, e.g. ./treeline run "
          + "--nodes 2 -- bench");
    }
    List<String> main = new ArrayList<>();
    if (COMMANDS.contains(rest.get(0))) {
      main.add(Treeline.class.getName());
    }
    main.addAll(rest);
    List<String> jvm = new ArrayList<>(List.of("-Xmx" + (heap >> 10) + "k",
        "-XX:MaxDirectMemorySize=2g"));
    // the Vector API for the host reducers, the foreign linker for the TMA GEMM's tensor maps
    jvm.addAll(ProcessLauncher.moduleOptions());
    List<ProcessLauncher.Result> results = ProcessLauncher.run(perNode, jvm, main, Map.of(),
        timeout, out, allOutput ? -1 : 0);
    int code = 0;
    for (ProcessLauncher.Result r : results) {
      if (r.exitCode() != 0) {
        if (code == 0) {
          code = r.exitCode();
        }
        if (r.rank() != 0 && !allOutput) {
          System.err.println("---- rank " + r.rank() + " exited with " + r.exitCode() + ":");
          System.err.print(r.output());
        }
      }
    }
    if (code != 0) {
      System.err.println("treeline run: " + results.stream().filter(r -> r.exitCode() != 0)
          .count() + " of " + results.size() + " ranks failed");
    }
    return code;
  }
}

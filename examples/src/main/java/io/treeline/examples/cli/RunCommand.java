package io.treeline.examples.cli;

import io.treeline.launch.ProcessLauncher;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code ./treeline run --nodes N --ranks-per-node G -- <command or main class> [args]}: the
 * host equivalent of torchrun. Starts N x G JVMs on simulated nodes, wires them through the TCP
 * store on rank 0, echoes rank 0's output as is and the others' prefixed, and exits with the
 * first failing rank's code.
 */
final class RunCommand {
  private static final Set<String> COMMANDS = Set.of("bench", "plan", "train");

  private RunCommand() {
  }

  static int run(String[] argv, PrintStream out) {
    int dash = Arrays.asList(argv).indexOf("--");
    String[] own = dash < 0 ? argv : Arrays.copyOfRange(argv, 0, dash);
    String[] rest = dash < 0 ? new String[0] : Arrays.copyOfRange(argv, dash + 1, argv.length);
    Args a = new Args("run", "Start ranks as separate JVMs on simulated nodes (TREELINE_NODE_ID),"
        + " torchrun style, and run a\ntreeline command or a main class in each:\n"
        + "  ./treeline run --nodes 2 --ranks-per-node 2 -- bench -b 8 -e 64M -f 4")
        .option("nodes", "N", "1", "simulated nodes")
        .option("ranks-per-node", "G", "2", "ranks per node, or a list such as 3,1,2 (overrides --nodes)")
        .option("timeout", "SECONDS", "600", "kill the job after this long")
        .option("heap", "SIZE", "512m", "-Xmx of each rank")
        .flag("all-output", "echo every rank's output, not only rank 0's and failures");
    if (!a.parse(own)) {
      return 0;
    }
    if (rest.length == 0) {
      throw new Args.UsageException("nothing to run: put the command after --, e.g. "
          + "./treeline run --nodes 2 -- bench");
    }
    String spec = a.get("ranks-per-node");
    int[] perNode;
    if (spec.contains(",")) {
      perNode = Arrays.stream(spec.split(",")).mapToInt(s -> Integer.parseInt(s.trim()))
          .toArray();
    } else {
      perNode = new int[a.getInt("nodes")];
      Arrays.fill(perNode, Integer.parseInt(spec.trim()));
    }
    List<String> main = new ArrayList<>();
    if (COMMANDS.contains(rest[0])) {
      main.add(Treeline.class.getName());
    }
    main.addAll(List.of(rest));
    List<String> jvm = List.of("-Xmx" + a.get("heap"), "-XX:MaxDirectMemorySize=2g");
    List<ProcessLauncher.Result> results = ProcessLauncher.run(perNode, jvm, main, Map.of(),
        Duration.ofSeconds(a.getInt("timeout")), out, a.has("all-output") ? -1 : 0);
    int code = 0;
    for (ProcessLauncher.Result r : results) {
      if (r.exitCode() != 0) {
        if (code == 0) {
          code = r.exitCode();
        }
        if (r.rank() != 0 && !a.has("all-output")) {
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

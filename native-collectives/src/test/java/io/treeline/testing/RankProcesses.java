package io.treeline.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.treeline.launch.ProcessLauncher;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Multi-process tests: one JVM per rank on simulated nodes, each running {@code main mode};
 * every rank must exit 0 (the failure message holds every rank's output), and a line per run
 * says how long it took and what rank 0 reported.
 */
public final class RankProcesses {
  private RankProcesses() {
  }

  /** Runs the ranks; returns their results after asserting that each exited 0. */
  public static List<ProcessLauncher.Result> run(int[] perNode, List<String> jvm, Class<?> main,
      String mode, long seconds, String label) {
    long t0 = System.nanoTime();
    List<ProcessLauncher.Result> res = ProcessLauncher.run(perNode, jvm,
        List.of(main.getName(), mode), Map.of(), Duration.ofSeconds(seconds), null, -1);
    StringBuilder all = new StringBuilder();
    for (ProcessLauncher.Result r : res) {
      all.append("---- rank ").append(r.rank()).append(" exit ").append(r.exitCode())
          .append('\n').append(r.output());
    }
    for (ProcessLauncher.Result r : res) {
      assertEquals(0, r.exitCode(), all.toString());
    }
    System.out.printf("%s%s on %s: %d ranks passed in %.1f s; rank 0: %s%n", label, mode,
        Arrays.toString(perNode), res.size(), (System.nanoTime() - t0) / 1e9,
        res.get(0).output().lines().filter(l -> l.startsWith("CHECK") || l.startsWith("LEAKS") || l.startsWith("SOAK")
            || l.startsWith("MISMATCH") || l.startsWith("rank 0")).toList());
    return res;
  }
}

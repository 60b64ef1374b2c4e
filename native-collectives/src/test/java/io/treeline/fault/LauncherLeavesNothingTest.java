package io.treeline.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Killing the launcher ({@code ./treeline run}'s {@code ProcessLauncher}) leaves no rank
 * running and no segment file: SIGTERM runs its shutdown hook, which stops the ranks; SIGKILL
 * runs nothing, and each rank sees its launcher gone ({@code LauncherWatch}) and exits.
 */
class LauncherLeavesNothingTest {
  private static final Pattern PID = Pattern.compile("PROBE-RANK pid=(\\d+)");

  @ParameterizedTest(name = "SIG{0}")
  @ValueSource(strings = {"TERM", "KILL"})
  void killingTheLauncherEndsItsRanks(String signal) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    Process launcher = new ProcessBuilder(java, "-Xmx96m", "-XX:+UseSerialGC", "-cp",
        System.getProperty("java.class.path"), LauncherProbe.class.getName())
        .redirectErrorStream(true).start();
    List<Long> pids = new ArrayList<>();
    StringBuilder out = new StringBuilder();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(
        launcher.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while (pids.size() < 2 && (line = in.readLine()) != null) {
        out.append(line).append('\n');
        Matcher m = PID.matcher(line);
        if (m.find()) {
          pids.add(Long.parseLong(m.group(1)));
        }
      }
      assertEquals(2, pids.size(), out.toString());
      long t0 = System.nanoTime();
      if (signal.equals("TERM")) {
        launcher.destroy();
      } else {
        launcher.destroyForcibly();
      }
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (pids.stream().anyMatch(p -> ProcessHandle.of(p).map(ProcessHandle::isAlive)
          .orElse(false)) && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      double took = (System.nanoTime() - t0) / 1e6;
      for (long p : pids) {
        assertTrue(ProcessHandle.of(p).map(h -> !h.isAlive()).orElse(true), "rank pid " + p
            + " still runs 10 s after SIG" + signal + " to its launcher\n" + out);
      }
      assertEquals(List.of(), FaultSuiteTest.shmFilesOf(pids), "segment files left");
      System.out.printf("LAUNCHER SIG%s: both ranks gone %.0f ms after the launcher was killed"
          + "%n", signal, took);
    } finally {
      launcher.destroyForcibly();
      for (long p : pids) {
        ProcessHandle.of(p).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
  }
}

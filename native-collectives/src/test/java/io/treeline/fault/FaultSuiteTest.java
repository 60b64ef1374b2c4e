package io.treeline.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.launch.ProcessLauncher;
import io.treeline.transport.shm.SharedSegment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fault suite: real JVMs per rank ({@link FaultRank}), one rank killed or stalled at a named
 * point (the {@code treeline.test.fault} hook), and every other rank must fail within its bound
 * with an exception that names itself, the faulty rank, the phase and the timeout; afterwards no
 * segment file of any rank is left in /dev/shm and no rank process is running.
 *
 * <p>Bounds: a killed rank, or one that fails or leaves, is noticed within {@link #FAIL_FAST}
 * of the fault, against a configured timeout of {@link #LONG_TIMEOUT} (the fail-fast paths, not
 * the timeout); a stalled rank (SIGSTOP, or a thread that sleeps) is noticed at the timeout
 * ({@link #SHORT_TIMEOUT}) plus at most {@link #FAIL_FAST}, and the message carries the hang
 * report that names it. Each case prints its measured detection times (the worst survivor).
 *
 * <p>CI runs 1 x 4 and 2 x 2; {@code -Dtreeline.faults.long=true} adds 3 x 2 and every action at
 * every point.
 */
class FaultSuiteTest {
  static final Duration LONG_TIMEOUT = Duration.ofSeconds(30);
  static final Duration SHORT_TIMEOUT = Duration.ofSeconds(2);
  static final long FAIL_FAST = 5000;
  private static final List<String> JVM = List.of("-Xmx128m", "-XX:MaxDirectMemorySize=256m",
      "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto");
  private static final boolean LONG = Boolean.getBoolean("treeline.faults.long");
  private static final Pattern DETECTED = Pattern.compile("FAULT-DETECTED t=(\\d+) (.*)");
  private static final Pattern INJECTED = Pattern.compile("FAULT-INJECTED .* t=(\\d+)");
  private static final Pattern PID = Pattern.compile("FAULT-RANK pid=(\\d+)");
  private static final List<String> SUMMARY = new ArrayList<>();

  /** One fault: where it strikes and what it does. */
  record Case(int[] perNode, int victim, String point, int call, String action) {
    boolean stall() {
      return action.equals("freeze") || action.equals("hang");
    }

    @Override
    public String toString() {
      return Arrays.toString(perNode) + " rank " + victim + " " + action + " at " + point
          + " #" + call;
    }
  }

  static Stream<Case> cases() {
    List<Case> c = new ArrayList<>();
    int[] oneByFour = {4};
    int[] twoByTwo = {2, 2};
    for (int[] shape : LONG ? new int[][] {oneByFour, twoByTwo, {2, 2, 2}}
        : new int[][] {oneByFour, twoByTwo}) {
      int n = Arrays.stream(shape).sum();
      int victim = n - 2; // not rank 0, which hosts the store: its death is the store's too
      List<String> points = new ArrayList<>(List.of("bootstrap", "intra", "between"));
      if (shape.length > 1) {
        points.add("network");
      }
      for (String point : points) {
        for (String action : LONG ? List.of("kill", "freeze", "hang") : List.of("kill",
            point.equals("intra") || point.equals("bootstrap") ? "hang" : "freeze")) {
          c.add(new Case(shape, victim, point, 2, action));
        }
      }
      if (shape.length > 1) {
        // a rank that fails at its first call, or leaves before it, as a task's code can
        c.add(new Case(shape, victim, "between", 1, "throw"));
        c.add(new Case(shape, victim, "user", 1, "leave"));
        c.add(new Case(shape, 0, "intra", 1, "kill")); // rank 0 hosts the store as well
        if (!LONG) { // a rank that never calls (the long variant has it in its loop)
          c.add(new Case(shape, victim, "between", 2, "hang"));
        }
      }
    }
    return c.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void everySurvivorFailsInTimeNamingTheFaultAndNothingIsLeft(Case k) throws IOException {
    Duration timeout = k.stall() ? SHORT_TIMEOUT : LONG_TIMEOUT;
    String fault = "rank=" + k.victim() + ",point=" + k.point() + ",call=" + k.call()
        + ",action=" + k.action() + ",ms=" + (timeout.toMillis() + 2000);
    List<String> jvm = new ArrayList<>(JVM);
    jvm.add("-Dtreeline.test.fault=" + fault);
    long t0 = System.nanoTime();
    List<ProcessLauncher.Result> res = ProcessLauncher.run(k.perNode(), jvm,
        List.of(FaultRank.class.getName(), Long.toString(timeout.toMillis()), "4"), Map.of(),
        Duration.ofSeconds(90), null, -1);
    double wall = (System.nanoTime() - t0) / 1e9;
    StringBuilder all = new StringBuilder(k.toString()).append('\n');
    for (ProcessLauncher.Result r : res) {
      all.append("---- rank ").append(r.rank()).append(" exit ").append(r.exitCode())
          .append('\n').append(r.output());
    }
    String victimOut = res.get(k.victim()).output();
    Matcher inj = INJECTED.matcher(victimOut);
    assertTrue(inj.find(), "the fault did not fire\n" + all);
    long injectedAt = Long.parseLong(inj.group(1));
    long worst = 0;
    String example = null;
    for (ProcessLauncher.Result r : res) {
      if (r.rank() == k.victim()) {
        continue;
      }
      assertEquals(0, r.exitCode(), all.toString());
      Matcher m = DETECTED.matcher(r.output());
      assertTrue(m.find(), "rank " + r.rank() + " did not fail\n" + all);
      long took = Long.parseLong(m.group(1)) - injectedAt;
      worst = Math.max(worst, took);
      String msg = m.group(2);
      if (example == null) {
        example = "rank " + r.rank() + ": " + msg;
      }
      long bound = FAIL_FAST + (k.stall() ? timeout.toMillis() : 0);
      assertTrue(took <= bound, "rank " + r.rank() + " failed " + took + " ms after the fault"
          + " (bound " + bound + " ms)\n" + all);
      assertTrue(msg.contains("rank " + r.rank()), "names itself: " + msg);
      assertTrue(msg.contains("rank " + k.victim()) || k.victim() == 0
          && msg.contains("store"), "names the faulty rank " + k.victim() + ": " + msg);
      assertTrue(msg.contains("timeout") || msg.contains("timed out after"), "timeout: " + msg);
      assertTrue(msg.matches(".*(all-gather|set-up|intra-node|network|#\\d).*"), "phase: " + msg);
      if (k.stall() && !k.point().equals("bootstrap")) {
        assertTrue(msg.contains("who waits for whom") && msg.matches(".*behind: .*rank "
            + k.victim() + "\\b.*"), "the hang report names rank " + k.victim() + ": " + msg);
      }
    }
    if (k.action().equals("freeze")) {
      // the resumed rank says what happened while it was stopped, not just "Broken pipe"
      Matcher m = DETECTED.matcher(victimOut);
      assertTrue(m.find(), "the resumed rank reported nothing\n" + all);
      assertTrue(m.group(2).matches(".*(aborted|closed its communicator|left the store|who "
          + "waits for whom).*"), "the resumed rank's error: " + m.group(2) + "\n" + all);
      example += "\n      resumed rank " + k.victim() + ": " + m.group(2);
    }
    List<Long> pids = new ArrayList<>();
    for (ProcessLauncher.Result r : res) {
      Matcher m = PID.matcher(r.output());
      if (m.find()) {
        pids.add(Long.parseLong(m.group(1)));
      }
    }
    assertEquals(res.size(), pids.size(), all.toString());
    for (long pid : pids) {
      assertTrue(ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true),
          "rank process " + pid + " still running");
    }
    List<String> left = shmFilesOf(pids);
    assertEquals(List.of(), left, "segment files left behind");
    String line = String.format("%-34s detected in %5d ms (bound %5d, timeout %5d ms), run %4.1f"
        + " s, shm files 0, processes 0", k, worst, FAIL_FAST + (k.stall() ? timeout.toMillis()
        : 0), timeout.toMillis(), wall);
    System.out.println("FAULT " + line + "\n      " + example.replace("|", "\n        "));
    SUMMARY.add(line);
  }

  static List<String> shmFilesOf(List<Long> pids) throws IOException {
    try (Stream<Path> s = Files.list(SharedSegment.directory())) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("treeline-")
          && pids.stream().anyMatch(pid -> n.endsWith("-p" + pid))).toList();
    }
  }

  @AfterAll
  static void summary() {
    System.out.println("FAULT SUITE " + SUMMARY.size() + " cases passed:");
    SUMMARY.forEach(l -> System.out.println("  " + l));
  }
}

package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.launch.ProcessLauncher;
import io.treeline.testing.RankProcesses;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Real JVMs, forked per rank, on simulated nodes; each checks its own results. */
class MultiProcessCollectivesTest {
  private static final List<String> JVM = List.of("-Xmx256m", "-XX:MaxDirectMemorySize=1g",
      "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  private static void runRanks(int[] perNode, String mode, long timeoutSeconds) {
    runRanks(perNode, JVM, mode, timeoutSeconds);
  }

  private static void runRanks(int[] perNode, List<String> jvm, String mode,
      long timeoutSeconds) {
    for (ProcessLauncher.Result r : RankProcesses.run(perNode, jvm, CollectiveCheck.class, mode,
        timeoutSeconds, "")) {
      assertTrue(r.output().contains("CHECK OK"), r.output());
    }
  }

  @Test
  void fourRanksOnOneNode() {
    runRanks(new int[] {4}, "matrix", 300);
  }

  @Test
  void eightRanksOnTwoNodes() {
    runRanks(new int[] {4, 4}, "matrix", 300);
  }

  @Test
  void sixRanksOnThreeNodesOddNodeCountSoTreeTwoIsAShift() {
    runRanks(new int[] {2, 2, 2}, "matrix", 300);
  }

  @Test
  void sevenRanksOnThreeUnevenNodes() {
    runRanks(new int[] {3, 1, 3}, "matrix", 300);
  }

  /**
   * One node: two-shot reads each rank's own slice from the caller's buffer (direct input) and
   * gathers into the caller's output, forced on (auto leaves them off where the ranks outnumber
   * the cores, as 3 do on a 2-core CI machine).
   */
  @Test
  void oneMebibytePlusThreeAndSixtyFourMebibytesOnThreeRanksOfOneNodeAlsoInPlace() {
    List<String> jvm = new java.util.ArrayList<>(JVM);
    jvm.add("-Dtreeline.directInput=true");
    jvm.add("-Dtreeline.directOutput=true");
    runRanks(new int[] {3}, jvm, "big", 300);
  }

  @Test
  void oneMebibytePlusThreeAndSixtyFourMebibytesOnEightRanks() {
    runRanks(new int[] {4, 4}, "big", 300);
  }

  /**
   * 1000 calls in CI; {@code -Dtreeline.soak.calls=10000} for the long soak of
   * docs/RELIABILITY.md (heap, direct memory, descriptors and threads sampled, flat).
   */
  @Test
  void thousandBackToBackAllReducesLeaveNoFileDescriptorOrThreadBehind() {
    int calls = Integer.getInteger("treeline.soak.calls", 1000);
    runRanks(new int[] {4, 4}, "soak:" + calls, 300 + calls / 10);
  }

  @Test
  void aRankCallingWithADifferentCountMakesEveryRankFailNamingIt() {
    for (int[] perNode : new int[][] {{4}, {2, 2}}) {
      List<ProcessLauncher.Result> res = ProcessLauncher.run(perNode, JVM,
          List.of(CollectiveCheck.class.getName(), "mismatch"), Map.of(), Duration.ofSeconds(120),
          null, -1);
      for (ProcessLauncher.Result r : res) {
        String out = r.output();
        assertEquals(0, r.exitCode(), out);
        assertTrue(out.contains("MISMATCH-DETECTED"), out);
        assertTrue(out.contains("different collective calls"), out);
        assertTrue(out.contains("rank 2"), out);
        assertTrue(out.contains("1001 x f32"), out);
      }
      System.out.println("mismatch on " + java.util.Arrays.toString(perNode) + ": "
          + res.get(0).output().lines().filter(l -> l.startsWith("MISMATCH")).findFirst()
          .orElse(""));
    }
  }
}

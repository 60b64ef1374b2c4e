package io.treeline.gpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.kernels.CudaModule;
import io.treeline.launch.ProcessLauncher;
import io.treeline.testing.RankProcesses;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU path across real processes: k JVMs on this machine's GPU, CUDA IPC between them
 * (scripts/device/run-gpu-tests.sh on the lent H200). Skipped, saying why, where there is no
 * CUDA driver or GPU; the plans and host logic these run are tested on the host path.
 */
@Tag("gpu")
class DeviceCollectivesTest {
  private static final List<String> JVM = List.of("-Xmx1g", "-XX:+UseSerialGC");

  @BeforeAll
  static void gpu() {
    try (CudaModule k = new CudaModule(0)) {
      // a context and the kernels load: there is a GPU
    } catch (Throwable t) {
      Assumptions.assumeTrue(false, "no usable GPU here: " + t);
    }
  }

  private static List<ProcessLauncher.Result> ranks(int k, String mode, long seconds) {
    return ranks(new int[] {k}, mode, seconds);
  }

  private static List<ProcessLauncher.Result> ranks(int[] perNode, String mode, long seconds) {
    return RankProcesses.run(perNode, JVM, DeviceCollectiveCheck.class, mode, seconds, "gpu ");
  }

  private static void ok(int k, String mode, long seconds) {
    ok(new int[] {k}, mode, seconds);
  }

  private static void ok(int[] perNode, String mode, long seconds) {
    for (ProcessLauncher.Result r : ranks(perNode, mode, seconds)) {
      assertTrue(r.output().contains("CHECK OK"), r.output());
    }
  }

  @Test
  void twoProcessesEveryTypeOpSizeAndAlgorithm() {
    ok(2, "matrix", 600);
  }

  @Test
  void fourProcessesEveryTypeOpSizeAndAlgorithm() {
    ok(4, "matrix", 600);
  }

  @Test
  void eightProcessesEveryTypeOpSizeAndAlgorithm() {
    ok(8, "matrix", 900);
  }

  @Test
  void sixtyFourMebibytesPlusOneElementAndWindowsOnFourAndEightProcesses() {
    ok(4, "big", 600);
    ok(8, "big", 600);
  }

  @Test
  void gradientsOnTheGpuAreAveragedInBucketsThroughTheRegisteredBuffer() {
    ok(4, "aggregator", 300);
  }

  @Test
  void theUserInterfaceAloneCopiesReducesAndWaitsByHandle() {
    ok(4, "userapi", 300);
  }

  @Test
  void closeLeavesNoDeviceMemoryOrSegmentBehind() {
    ok(4, "leaks", 600);
  }

  @Test
  void aRankCallingWithADifferentCountMakesEveryRankFailNamingIt() {
    for (ProcessLauncher.Result r : ranks(4, "mismatch", 120)) {
      assertTrue(r.output().contains("MISMATCH-DETECTED"), r.output());
      assertTrue(r.output().contains("rank 1"), r.output());
    }
  }

  @Test
  void withFlagSyncARankCallingWithADifferentCountFailsEveryRankNamingBothCalls() {
    for (ProcessLauncher.Result r : ranks(2, "flags-mismatch", 180)) {
      String out = r.output();
      assertTrue(out.contains("MISMATCH-DETECTED"), out);
      assertTrue(out.contains("allreduce of 1000 x f32") && out.contains("allreduce of 1001 x "
          + "f32") && out.contains("GPU flag barrier of collective #3"), out);
      assertTrue(out.contains(r.rank() == 0 ? "but rank 1" : "rank 1 is in call #3"), out);
    }
  }

  @Test
  void flagBarriersAreCorrectEvenWhenTheRanksShareOneGpu() {
    ok(2, "flags", 300);
  }

  @Test
  void acrossTwoSimulatedNodesSlicesCrossThroughPinnedHostMemory() {
    // 2 x 2 processes on the one GPU; TREELINE_NODE_ID puts them on two nodes, so IPC inside
    // each pair and the host stage (TCP) between them
    ok(new int[] {2, 2}, "matrix", 600);
  }

  @Test
  void acrossThreeSimulatedNodesWithSixtyFourMebibytesAndWindows() {
    ok(new int[] {2, 2, 2}, "big", 600);
  }

  @Test
  void ranksThatAreThreadsOfOneJvmShareAddressesWithoutIpc() throws Exception {
    long t0 = System.nanoTime();
    long n = DeviceCollectiveCheck.threads(4, "matrix");
    System.out.printf("gpu matrix, 4 threads of one JVM: %d results in %.1f s%n", n,
        (System.nanoTime() - t0) / 1e9);
    assertTrue(n > 0);
  }
}

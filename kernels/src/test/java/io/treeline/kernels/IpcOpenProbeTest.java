package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class IpcOpenProbeTest {
  @Test
  void everyGpusPatternDiffers() {
    assertFalse(java.util.Arrays.equals(IpcOpenProbe.pattern(0), IpcOpenProbe.pattern(1)));
    assertEquals(IpcOpenProbe.CHECK_BYTES, IpcOpenProbe.pattern(7).length);
  }

  /**
   * A child that answers two pairs and hangs in the third: killed at the deadline, the hung pair
   * named as such, the pair never reached says so, the answered ones keep their answers.
   */
  @Test
  void aHungChildIsKilledAtTheDeadlineAndThePairItHungOnIsNamed() {
    List<String> child = List.of("bash", "-c", "cat > /dev/null; echo 'ok 0 0'; "
        + "echo 'fail 1 0 open: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED'; echo 'begin 0 1'; "
        + "exec sleep 60");
    long t0 = System.nanoTime();
    IpcOpenProbe.Result r = IpcOpenProbe.runChild(child, new String[] {"aa", "bb"},
        new String[2][2], Duration.ofSeconds(1));
    assertTrue(System.nanoTime() - t0 < 15_000_000_000L, "the deadline bounds the probe");
    assertNull(r.unavailable());
    assertArrayEquals(new boolean[] {true, false}, r.open()[0]);
    assertArrayEquals(new boolean[] {false, false}, r.open()[1]);
    assertNull(r.error()[0][0]);
    assertEquals("opener GPU 0, owner GPU 1: open: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        r.error()[1][0]);
    assertTrue(r.error()[0][1].startsWith("opener GPU 1, owner GPU 0: no answer within 1 s"),
        r.error()[0][1]);
    assertTrue(r.error()[1][1].startsWith("not probed: the child JVM was killed at the 1 s "
        + "deadline"), r.error()[1][1]);
  }

  @Test
  void aChildThatDiesEarlyLeavesItsLastWordsInTheErrors() {
    List<String> child = List.of("bash", "-c", "cat > /dev/null; echo 'ok 0 0'; "
        + "echo 'Exception in thread main: boom'; exit 1");
    IpcOpenProbe.Result r = IpcOpenProbe.runChild(child, new String[] {"aa", "bb"},
        new String[2][2], Duration.ofSeconds(20));
    assertTrue(r.open()[0][0]);
    assertTrue(r.error()[1][1].contains("exited with status 1 before reaching this pair; it "
        + "said: Exception in thread main: boom"), r.error()[1][1]);
  }

  @Test
  void anOwnerThatCouldNotExportKeepsItsOwnReason() {
    String[][] error = new String[2][2];
    error[1][0] = "owner GPU 1 could not export an IPC handle: CUDA_ERROR_OUT_OF_MEMORY";
    error[1][1] = error[1][0];
    IpcOpenProbe.Result r = IpcOpenProbe.parse(List.of("begin 0 0", "ok 0 0", "begin 0 1",
        "ok 0 1"), new boolean[2][2], error, true, 0, Duration.ofSeconds(5));
    assertTrue(r.open()[0][1]);
    assertEquals(error[1][0], r.error()[1][1]);
  }

  /** The real child JVM, on a machine without a driver: every pair carries its reason. */
  @Test
  void theChildJvmWithoutADriverSaysWhyForEveryPair() {
    Assumptions.assumeFalse(GpuDevices.list().available(), "this machine has a CUDA driver");
    List<String> child = List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin",
        "java").toString(), "-cp", System.getProperty("java.class.path"),
        IpcOpenProbe.class.getName(), "--child", "20000");
    IpcOpenProbe.Result r = IpcOpenProbe.runChild(child, new String[] {"aa", "-"},
        new String[2][2], Duration.ofSeconds(20));
    assertFalse(r.open()[0][0]);
    assertTrue(r.error()[1][0].startsWith("the probe's child JVM has no usable driver: no CUDA "
        + "driver"), r.error()[1][0]);
  }

  @Test
  void withoutADriverTheProbeSaysWhyWithoutStartingAChild() {
    Assumptions.assumeFalse(GpuDevices.list().available(), "this machine has a CUDA driver");
    IpcOpenProbe.Result r = IpcOpenProbe.probe(Duration.ofSeconds(5));
    assertTrue(r.unavailable().startsWith("no CUDA driver"), r.unavailable());
    assertEquals(0, r.gpus());
  }

  /** On a GPU machine every GPU's handle opens in a second process, itself included. */
  @Tag("gpu")
  @Test
  void onAGpuMachineEveryGpuOpensItsOwnHandleFromAnotherProcess() {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeTrue(l.available(), () -> "no GPU here: " + l.unavailable());
    IpcOpenProbe.Result r = IpcOpenProbe.probe(Duration.ofSeconds(120));
    assertNull(r.unavailable());
    assertEquals(l.gpus().size(), r.gpus());
    for (int i = 0; i < r.gpus(); i++) {
      assertTrue(r.open()[i][i], "GPU " + i + ": " + r.error()[i][i]);
    }
  }
}

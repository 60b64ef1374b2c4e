package io.treeline.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.plan.Algorithm;
import org.junit.jupiter.api.Test;

/** The GPU path's choice between one-shot and two-shot, on the host. */
class DeviceOptionsTest {
  /** The largest power-of-two size up to 4 GiB that the model still gives to one-shot. */
  private static long lastOneShot(DeviceCostModel m, int k) {
    long last = 0;
    for (long b = 8; b <= (4L << 30); b *= 2) {
      if (m.choose(k, b) == Algorithm.ONESHOT) {
        last = b;
      }
    }
    return last;
  }

  @Test
  void oneShotBelowACrossoverTwoShotAboveAndNeverAnythingElse() {
    for (boolean shared : new boolean[] {true, false}) {
      for (int k : new int[] {2, 3, 4, 8}) {
        DeviceCostModel m = DeviceOptions.defaultCostModel(shared, false, k);
        boolean two = false;
        for (long b = 8; b <= (4L << 30); b *= 2) {
          Algorithm a = m.choose(k, b);
          assertTrue(a == Algorithm.ONESHOT || a == Algorithm.TWOSHOT, a + " at " + b);
          if (two) {
            assertEquals(Algorithm.TWOSHOT, a, "no switching back at " + b);
          }
          two |= a == Algorithm.TWOSHOT;
        }
      }
    }
  }

  @Test
  void theCrossoversAreTheOnesMeasuredOnTheH200() {
    // threads of one JVM: 2 ranks switch between 32 and 64 MiB, 4 and 8 between 8 and 16 MiB
    assertEquals(32L << 20, lastOneShot(DeviceOptions.defaultCostModel(true, true, 2), 2));
    assertEquals(8L << 20, lastOneShot(DeviceOptions.defaultCostModel(true, true, 4), 4));
    assertEquals(8L << 20, lastOneShot(DeviceOptions.defaultCostModel(true, true, 8), 8));
    // processes: 4 ranks between 128 and 256 MiB (measured a tie at 256), 8 between 64 and 128
    assertEquals(128L << 20, lastOneShot(DeviceOptions.defaultCostModel(true, false, 4), 4));
    assertEquals(64L << 20, lastOneShot(DeviceOptions.defaultCostModel(true, false, 8), 8));
  }

  @Test
  void twoRanksOnOneGpuMoveLessWithTwoShotAlthoughBothReadTheMessageTwice() {
    DeviceCostModel m = new DeviceCostModel(0, 4000, true);
    assertTrue(m.micros(Algorithm.TWOSHOT, 2, 1 << 30) < m.micros(Algorithm.ONESHOT, 2, 1 << 30));
    assertEquals(6.0 / 5, m.micros(Algorithm.ONESHOT, 2, 1 << 30)
        / m.micros(Algorithm.TWOSHOT, 2, 1 << 30), 1e-9);
  }

  @Test
  void oneGpuPerRankSwitchesBelowAMebibyteAtEightRanks() {
    long b = lastOneShot(DeviceOptions.defaultCostModel(false, false, 8), 8);
    assertTrue(b >= (256 << 10) && b <= (1 << 20), "8 GPUs: " + b);
  }

  @Test
  void registeredBuffersAreWholeMultiplesOf256Bytes() {
    assertThrows(IllegalArgumentException.class, () -> DeviceOptions.DEFAULT.withBufferBytes(100));
    assertEquals(1 << 20, DeviceOptions.DEFAULT.withBufferBytes(1 << 20).bufferBytes());
  }
}

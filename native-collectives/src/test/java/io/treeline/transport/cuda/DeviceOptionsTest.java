package io.treeline.transport.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.plan.Algorithm;
import io.treeline.plan.AlgorithmSelector;
import io.treeline.plan.Topology;
import org.junit.jupiter.api.Test;

/** The GPU path's choice between one-shot and two-shot, on the host. */
class DeviceOptionsTest {
  /** The largest power-of-two size up to 4 GiB that the model still gives to one-shot. */
  private static long lastOneShot(AlgorithmSelector s, int k) {
    Topology t = Topology.of(k);
    long last = 0;
    for (long b = 8; b <= (4L << 30); b *= 2) {
      if (DeviceOptions.choose(s, t, b) == Algorithm.ONESHOT) {
        last = b;
      }
    }
    return last;
  }

  @Test
  void onlyOneShotOrTwoShotIsEverChosenEvenWhereRoundsAreExpensive() {
    // processes time-sliced on one GPU: rounds cost hundreds of microseconds, which made the
    // general selector pick the ring, a message plan the device path does not run
    for (int k : new int[] {2, 3, 4, 8}) {
      AlgorithmSelector s = DeviceOptions.defaultSelector(true, false, k);
      for (long b = 8; b <= (4L << 30); b *= 4) {
        Algorithm a = DeviceOptions.choose(s, Topology.of(k), b);
        assertTrue(a == Algorithm.ONESHOT || a == Algorithm.TWOSHOT, a + " at " + b);
      }
    }
  }

  @Test
  void theCrossoversAreTheOnesMeasuredOnTheH200() {
    // threads of one JVM: 4 ranks switch between 8 and 16 MiB, 8 ranks between 8 and 16 MiB
    assertEquals(8L << 20, lastOneShot(DeviceOptions.defaultSelector(true, true, 4), 4));
    assertEquals(8L << 20, lastOneShot(DeviceOptions.defaultSelector(true, true, 8), 8));
    // processes: 4 ranks between 128 and 512 MiB, 8 ranks between 64 and 128 MiB
    long p4 = lastOneShot(DeviceOptions.defaultSelector(true, false, 4), 4);
    assertTrue(p4 >= (128L << 20) && p4 < (512L << 20), "4 processes: " + p4);
    assertEquals(64L << 20, lastOneShot(DeviceOptions.defaultSelector(true, false, 8), 8));
    // two ranks read as much with one-shot as with two-shot, with one round fewer
    assertEquals(4L << 30, lastOneShot(DeviceOptions.defaultSelector(true, true, 2), 2));
  }

  @Test
  void oneGpuPerRankSwitchesBelowAMebibyteAtEightRanks() {
    long b = lastOneShot(DeviceOptions.defaultSelector(false, false, 8), 8);
    assertTrue(b >= (256 << 10) && b <= (1 << 20), "8 GPUs: " + b);
  }

  @Test
  void registeredBuffersAreWholeMultiplesOf256Bytes() {
    assertThrows(IllegalArgumentException.class, () -> DeviceOptions.DEFAULT.withBufferBytes(100));
    assertEquals(1 << 20, DeviceOptions.DEFAULT.withBufferBytes(1 << 20).bufferBytes());
  }
}

package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class P2pBandwidthTest {
  @Test
  void theMedianOfTheRepetitionsIsReported() {
    assertEquals(3.0, P2pBandwidth.median(new double[] {9, 1, 3}));
    assertEquals(2.5, P2pBandwidth.median(new double[] {4, 1, 2, 3}));
  }

  @Test
  void withoutADriverNothingIsMeasuredAndTheReasonIsGiven() {
    Assumptions.assumeFalse(GpuDevices.list().available(), "this machine has a CUDA driver");
    P2pBandwidth.Result r = P2pBandwidth.measure();
    assertTrue(r.matrices().isEmpty());
    assertTrue(r.unavailable().startsWith("no CUDA driver"), r.unavailable());
  }

  /** On a GPU machine: every pair measured at both sizes, the local copy fastest. */
  @Tag("gpu")
  @Test
  void onAGpuMachineEveryPairHasABandwidth() {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeTrue(l.available(), () -> "no GPU here: " + l.unavailable());
    P2pBandwidth.Result r = P2pBandwidth.measure();
    assertNull(r.unavailable());
    assertEquals(2, r.matrices().size());
    for (P2pBandwidth.Matrix m : r.matrices()) {
      for (int i = 0; i < m.gbps().length; i++) {
        for (int j = 0; j < m.gbps().length; j++) {
          assertNull(m.error()[i][j]);
          assertTrue(m.gbps()[i][j] > 0, m.bytes() + " B, GPU " + i + " -> " + j);
        }
      }
      System.out.printf("%d B: GPU0 local copy %.1f GB/s%n", m.bytes(), m.gbps()[0][0]);
    }
  }
}

package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class GemmShapesTest {
  @Test
  void theThreeProductsOfADenseLayerPass() {
    int m = 128;
    int in = 784;
    int out = 256;
    GemmShapes.check(false, in, false, out, out, m, out, in, false, 0); // Z = X W
    GemmShapes.check(false, out, true, out, in, m, in, out, true, in); // dX = dZ W^T, masked
    GemmShapes.check(true, in, false, out, out, in, out, m, false, 0); // dW = X^T dZ
    GemmShapes.check(false, 0, false, 0, 0, 0, 0, 5, false, 0); // empty: nothing to stride over
    GemmShapes.check(false, 0, false, 0, 3, 2, 3, 0, false, 0); // k = 0 reads nothing
  }

  @Test
  void aLeadingDimensionShorterThanItsRowIsRefusedByName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(false, 783, false, 256, 256, 128, 256, 784, false, 0));
    assertTrue(e.getMessage().startsWith("lda 783 < 784"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(true, 127, false, 256, 256, 128, 256, 784, false, 0));
    assertTrue(e.getMessage().startsWith("lda 127 < 128"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(false, 10, true, 9, 7, 3, 7, 10, false, 0));
    assertTrue(e.getMessage().startsWith("ldb 9 < 10"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(false, 10, false, 7, 6, 3, 7, 10, false, 0));
    assertTrue(e.getMessage().startsWith("ldc 6 < n 7"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(false, 10, false, 7, 7, 3, 7, 10, true, 6));
    assertTrue(e.getMessage().startsWith("ldmask 6"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> GemmShapes.check(false, 1, false, 1, 1, -1, 1, 1, false, 0));
  }

  @Test
  void tilesCoverEveryRowAndFlopsCountMultiplyAdds() {
    assertEquals(1, TrainingKernels.tiles(1));
    assertEquals(1, TrainingKernels.tiles(64));
    assertEquals(2, TrainingKernels.tiles(65));
    assertEquals(13, TrainingKernels.tiles(784));
    assertEquals(2.0 * 128 * 256 * 784, GemmShapes.flops(128, 256, 784));
  }

  @Test
  void largeOutputsTakeTheBigTilesAndSmallOnesSplitK() {
    int sms = 132; // an H200
    // the 20M model and square products: a wave of 128 x 128 tiles
    assertArrayEquals(new int[] {1, 1}, TrainingKernels.shape(4096, 4096, 4096, sms));
    assertArrayEquals(new int[] {1, 1}, TrainingKernels.shape(512, 4096, 4096, sms));
    // the default model's first layer: 8 small tiles, K = 784 (25 slices) split 6 ways
    assertArrayEquals(new int[] {6, 0}, TrainingKernels.shape(128, 256, 784, sms));
    // its K = 128 products are not split: a second launch costs more than it saves
    assertArrayEquals(new int[] {1, 0}, TrainingKernels.shape(784, 256, 128, sms));
    // at most 16 splits, each at least four slices of 32
    assertArrayEquals(new int[] {16, 0}, TrainingKernels.shape(130, 70, 3001, sms));
    assertArrayEquals(new int[] {1, 0}, TrainingKernels.shape(128, 10, 63, sms));
    assertArrayEquals(new int[] {1, 0}, TrainingKernels.shape(5, 3, 0, sms));
    // enough small tiles for two waves: no split
    assertArrayEquals(new int[] {1, 0}, TrainingKernels.shape(1024, 1280, 64, sms));
    // the partial sums fit the 4 Mi-float workspace
    int[] wide = TrainingKernels.shape(64, 65536, 100_000, 4096);
    assertEquals(0, wide[1]);
    assertTrue((long) wide[0] * 64 * 65536 <= 4L << 20, "splits " + wide[0]);
  }
}

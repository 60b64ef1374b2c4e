package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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

  @Test
  void theWgmmaPathTakesAWaveOfWideBlocksAndSplitsKOnlyForFewBlocks() {
    int sms = 132; // an H200
    // 4096^3: 32 x 16 blocks of 128 x 256; the 20M model's weight gradient (TN, B transposed
    // first) has as many, but K = 512 is too short for the wide block (measured slower)
    assertArrayEquals(new int[] {256, 1},
        TrainingKernels.hopperShape(false, false, 4096, 4096, 4096, sms));
    assertArrayEquals(new int[] {128, 1},
        TrainingKernels.hopperShape(true, false, 4096, 4096, 512, sms));
    // its forward (NN: R = B, 4096 / 128 = 32 by 512 / 128 = 4) and input gradient (NT: R = A,
    // 4 by 4096 / 128 = 32): 128 blocks of 128 x 128 unsplit are less than two waves, so 64
    // blocks of 128 x 256 with K split 2 ways (measured faster); at K = 784 the 128-wide ones
    assertArrayEquals(new int[] {256, 2},
        TrainingKernels.hopperShape(false, false, 512, 4096, 4096, sms));
    assertArrayEquals(new int[] {256, 2},
        TrainingKernels.hopperShape(false, true, 512, 4096, 4096, sms));
    assertArrayEquals(new int[] {128, 1},
        TrainingKernels.hopperShape(false, false, 512, 4096, 784, sms));
    // 1021^3: 64 blocks of 128 x 128 are half a wave, split 2 ways as before (the 256-wide
    // split ran slower); 2048 x 2048 x 2048 NN: 256 blocks of 128 x 128, two waves, no split
    assertArrayEquals(new int[] {128, 2},
        TrainingKernels.hopperShape(true, true, 1021, 1021, 1021, sms));
    assertArrayEquals(new int[] {128, 1},
        TrainingKernels.hopperShape(false, false, 2048, 2048, 2048, sms));
    // first layer's weight gradient: 7 x 32 blocks of 128 x 128
    assertArrayEquals(new int[] {128, 1},
        TrainingKernels.hopperShape(true, false, 784, 4096, 512, sms));
    // two blocks: K = 784 (25 slices) split 6 ways; four blocks over K = 4096: 16 ways
    assertArrayEquals(new int[] {128, 6},
        TrainingKernels.hopperShape(false, false, 128, 256, 784, sms));
    assertArrayEquals(new int[] {128, 16},
        TrainingKernels.hopperShape(false, false, 512, 10, 4096, sms));
    // nothing to multiply, or a transposed B over 16 Mi floats: not this path
    assertNull(TrainingKernels.hopperShape(false, false, 5, 3, 0, sms));
    assertNull(TrainingKernels.hopperShape(true, false, 64, 65536, 4096, sms));
    // TT reads B as it is: 1 x 256 blocks of 128 x 256
    assertArrayEquals(new int[] {256, 1},
        TrainingKernels.hopperShape(true, true, 64, 65536, 4096, sms));
    // the partial sums fit the 4 Mi-float workspace
    int[] wide = TrainingKernels.hopperShape(false, true, 64, 65536, 100_000, 4096);
    assertTrue((long) wide[1] * 64 * 65536 <= 4L << 20, "splits " + wide[1]);
  }

  @Test
  void theTmaKernelsRunUnsplit128WideBlocksAtTheModelsLargeProductsAndSplitOnlyFewBlocks() {
    int sms = 132;
    // the 20M model: 512 x 4096 x 4096 NN is 32 x 4 blocks (R = B), one wave: unsplit, as
    // measured fastest (0.0604 ms against 0.0800 split 2 ways, H100, 2026-12-05)
    assertArrayEquals(new int[] {128, 1}, TrainingKernels.tmaShape(false, false, 512, 4096, 4096,
        sms));
    assertArrayEquals(new int[] {128, 1}, TrainingKernels.tmaShape(false, true, 512, 4096, 4096,
        sms));
    assertArrayEquals(new int[] {128, 1}, TrainingKernels.tmaShape(true, false, 4096, 4096, 512,
        sms));
    assertArrayEquals(new int[] {128, 1}, TrainingKernels.tmaShape(true, false, 784, 4096, 512,
        sms));
    assertArrayEquals(new int[] {128, 1}, TrainingKernels.tmaShape(false, false, 4096, 4096,
        4096, sms));
    // the default model's first layer: 2 blocks, K = 784 (25 slices) split 6 ways
    assertArrayEquals(new int[] {128, 6}, TrainingKernels.tmaShape(false, false, 128, 256, 784,
        sms));
    // a long K: about a block per multiprocessor (32 blocks: 4 splits), 16 splits at most
    assertArrayEquals(new int[] {128, 4}, TrainingKernels.tmaShape(false, false, 1, 4096,
        16411, sms));
    assertArrayEquals(new int[] {128, 16}, TrainingKernels.tmaShape(false, true, 100, 100,
        16411, sms));
    assertArrayEquals(new int[] {128, 3}, TrainingKernels.tmaShape(false, false, 100, 100, 400,
        sms));
    // nothing to do, or a TN product whose transposed B would not fit its buffer
    assertNull(TrainingKernels.tmaShape(false, false, 0, 5, 5, sms));
    assertNull(TrainingKernels.tmaShape(false, false, 5, 5, 0, sms));
    assertNull(TrainingKernels.tmaShape(true, false, 8, 1 << 16, 1 << 10, sms));
    // the partial sums fit the workspace
    int[] wide = TrainingKernels.tmaShape(false, true, 64, 65536, 100_000, 4096);
    assertTrue((long) wide[1] * 64 * 65536 <= 4L << 20, "splits " + wide[1]);
  }
}

package io.treeline.kernels;

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
}

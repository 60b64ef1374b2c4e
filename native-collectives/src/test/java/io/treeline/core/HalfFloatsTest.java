package io.treeline.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HalfFloatsTest {

  @Test
  void everyHalfRoundTripsExactly() {
    for (int h = 0; h < 1 << 16; h++) {
      float f = HalfFloats.halfToFloat((short) h);
      if (Float.isNaN(f)) {
        assertTrue(Float.isNaN(HalfFloats.halfToFloat(HalfFloats.floatToHalf(f))));
      } else {
        assertEquals(h, HalfFloats.floatToHalf(f) & 0xFFFF, "half 0x" + Integer.toHexString(h));
      }
    }
  }

  @Test
  void halfRoundsToNearestEvenAtEveryMidpoint() {
    // between two adjacent finite positive halves a and a+1, the exact midpoint (a float) must
    // go to the even one, and anything just above or below to the nearer one
    for (int a = 0; a < 0x7BFF; a++) {
      float lo = HalfFloats.halfToFloat((short) a);
      float hi = HalfFloats.halfToFloat((short) (a + 1));
      float mid = (float) (((double) lo + hi) / 2);
      int even = (a & 1) == 0 ? a : a + 1;
      assertEquals(even, HalfFloats.floatToHalf(mid), "midpoint above 0x" + Integer.toHexString(a));
      assertEquals(a, HalfFloats.floatToHalf(Math.nextDown(mid)));
      assertEquals(a + 1, HalfFloats.floatToHalf(Math.nextUp(mid)));
      assertEquals(a | 0x8000, HalfFloats.floatToHalf(-Math.nextDown(mid)) & 0xFFFF);
    }
  }

  @Test
  void halfOverflowsToInfinityPastTheLastMidpoint() {
    assertEquals(0x7BFF, HalfFloats.floatToHalf(65504f));
    assertEquals(0x7BFF, HalfFloats.floatToHalf(Math.nextDown(65520f)));
    assertEquals(0x7C00, HalfFloats.floatToHalf(65520f));
    assertEquals(0x7C00, HalfFloats.floatToHalf(Float.POSITIVE_INFINITY));
    assertEquals(0, HalfFloats.floatToHalf(0x1p-25f)); // exactly half the smallest subnormal
    assertEquals(1, HalfFloats.floatToHalf(Math.nextUp(0x1p-25f)));
  }

  @Test
  void bf16RoundsToNearestEvenAndKeepsNaN() {
    for (int hiBits = 0; hiBits < 0x7F7F; hiBits += 7) {
      int base = hiBits << 16;
      float mid = Float.intBitsToFloat(base | 0x8000);
      int even = (hiBits & 1) == 0 ? hiBits : hiBits + 1;
      assertEquals(even, HalfFloats.floatToBf16(mid) & 0xFFFF);
      assertEquals(hiBits, HalfFloats.floatToBf16(Float.intBitsToFloat(base | 0x7FFF)) & 0xFFFF);
      assertEquals(hiBits + 1, HalfFloats.floatToBf16(Float.intBitsToFloat(base | 0x8001))
          & 0xFFFF);
      assertEquals(Float.intBitsToFloat(base), HalfFloats.bf16ToFloat((short) hiBits));
    }
    assertTrue(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(Float.NaN))));
  }
}

package io.treeline.core;

/**
 * IEEE binary16 and bfloat16 conversions, both rounding to nearest even. Java 17 has no
 * {@code Float.floatToFloat16}; this is the same rounding rule (round bit, sticky bit, LSB).
 */
public final class HalfFloats {
  private static final float[] HALF_TO_FLOAT = new float[1 << 16];

  static {
    for (int h = 0; h < (1 << 16); h++) {
      HALF_TO_FLOAT[h] = decodeHalf((short) h);
    }
  }

  private HalfFloats() {
  }

  /**
   * binary16 bits to float; exact.
   *
   * @param h the half's bits
   * @return its value
   */
  public static float halfToFloat(short h) {
    return HALF_TO_FLOAT[h & 0xFFFF];
  }

  /**
   * float to binary16 bits, round to nearest even; overflow goes to infinity, NaN stays NaN.
   *
   * @param f the value
   * @return the nearest half's bits
   */
  public static short floatToHalf(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int exp = (bits >>> 23) & 0xFF;
    int mant = bits & 0x7F_FFFF;
    if (exp == 0xFF) {
      // Inf stays Inf; NaN keeps its top payload bits and is forced quiet.
      return (short) (sign | 0x7C00 | (mant != 0 ? 0x200 | (mant >>> 13) : 0));
    }
    int e = exp - 127 + 15; // binary16 biased exponent
    if (e >= 0x1F) {
      return (short) (sign | 0x7C00);
    }
    if (e <= 0) {
      // Subnormal half (or zero): shift the significand with its hidden bit in.
      if (e < -10) {
        return (short) sign; // below half of the smallest subnormal: +-0
      }
      int m = mant | 0x80_0000;
      int shift = 14 - e; // 13 + (1 - e)
      int trunc = m >>> shift;
      int rem = m & ((1 << shift) - 1);
      int half = 1 << (shift - 1);
      if (rem > half || (rem == half && (trunc & 1) != 0)) {
        trunc++;
      }
      return (short) (sign | trunc);
    }
    int trunc = (e << 10) | (mant >>> 13);
    int rem = mant & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (trunc & 1) != 0)) {
      trunc++; // a carry into the exponent is correct, up to and including Inf
    }
    return (short) (sign | trunc);
  }

  /**
   * bfloat16 bits to float; exact.
   *
   * @param b the bfloat16's bits
   * @return its value
   */
  public static float bf16ToFloat(short b) {
    return Float.intBitsToFloat((b & 0xFFFF) << 16);
  }

  /**
   * float to bfloat16 bits, round to nearest even; NaN stays NaN (quiet).
   *
   * @param f the value
   * @return the nearest bfloat16's bits
   */
  public static short floatToBf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
      return (short) ((bits >>> 16) | 0x40);
    }
    int lsb = (bits >>> 16) & 1;
    return (short) ((bits + 0x7FFF + lsb) >>> 16);
  }

  private static float decodeHalf(short h) {
    int bits = h & 0xFFFF;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1F;
    int mant = bits & 0x3FF;
    if (exp == 0x1F) {
      return Float.intBitsToFloat(sign | 0x7F80_0000 | (mant << 13));
    }
    if (exp == 0) {
      float v = mant * 0x1p-24f; // exact: subnormal halves are multiples of 2^-24
      return sign != 0 ? -v : v;
    }
    return Float.intBitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
  }
}

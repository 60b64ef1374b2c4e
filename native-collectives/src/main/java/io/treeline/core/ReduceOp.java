package io.treeline.core;

import java.util.Locale;

/**
 * Elementwise reduction operators. {@link #AVG} reduces as a sum and divides once by the number
 * of contributing ranks when the value is final; for integer types the division truncates
 * toward zero (unsigned for u8) after the sum has wrapped in the type's width, as NCCL does.
 */
public enum ReduceOp {
  SUM, PROD, MIN, MAX, AVG;

  public static ReduceOp parse(String s) {
    try {
      return valueOf(s.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown reduce op '" + s
          + "'; expected one of sum, prod, min, max, avg", e);
    }
  }

  public String shortName() {
    return name().toLowerCase(Locale.ROOT);
  }
}

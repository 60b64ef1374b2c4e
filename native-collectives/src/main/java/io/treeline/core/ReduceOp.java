package io.treeline.core;

import java.util.Locale;

/**
 * Elementwise reduction operators. {@link #AVG} reduces as a sum and divides once by the number
 * of contributing ranks when the value is final; for integer types the division truncates
 * toward zero (unsigned for u8) after the sum has wrapped in the type's width, as NCCL does.
 */
public enum ReduceOp {
  /** The sum. */
  SUM,
  /** The product. */
  PROD,
  /** The minimum. */
  MIN,
  /** The maximum. */
  MAX,
  /** The sum divided by the number of ranks (truncating for integer types). */
  AVG;

  /**
   * The operator a name means ({@code sum}, {@code prod}, {@code min}, {@code max},
   * {@code avg}; any case).
   *
   * @param s the name
   * @return the operator
   * @throws IllegalArgumentException naming the valid names when {@code s} is none
   */
  public static ReduceOp parse(String s) {
    try {
      return valueOf(s.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown reduce op '" + s
          + "'; expected one of sum, prod, min, max, avg", e);
    }
  }

  /**
   * The lower-case name, as {@link #parse} reads it.
   *
   * @return "sum", "prod", "min", "max" or "avg"
   */
  public String shortName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
